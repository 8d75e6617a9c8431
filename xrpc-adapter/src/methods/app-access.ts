import type { ErrorCode } from '@svc/errors'

/**
 * An app that is not registered, or not configured in the environment, is not authorized for a call whose
 * contract names AppUnauthorized (getConfig and updateConfig name them separately).
 */
export const APP_ACCESS_ERRORS: Partial<Record<ErrorCode, ErrorCode>> = {
  AppNotRegistered: 'AppUnauthorized',
  AppEnvironmentNotConfigured: 'AppUnauthorized',
}

/** The environment parameter or body field, or null: the apps subgraph then picks the app's only configured one. */
export const environmentOf = (value: unknown): string | null => (typeof value === 'string' ? value : null)
