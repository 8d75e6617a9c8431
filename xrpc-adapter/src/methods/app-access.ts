import type { ErrorCode } from '@svc/errors'

/**
 * An app that is not registered, or not configured in the environment, is not authorized for a call whose
 * contract names AppUnauthorized (getConfig and updateConfig name them separately).
 */
export const APP_ACCESS_ERRORS: Partial<Record<ErrorCode, ErrorCode>> = {
  AppNotRegistered: 'AppUnauthorized',
  AppEnvironmentNotConfigured: 'AppUnauthorized',
}

