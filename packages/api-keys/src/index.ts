/**
 * Restricted API keys: `svc_rk_<test|live>_` + 32 random base64url characters, bound to one app and
 * environment. Only the SHA-256 of a key is stored; its display prefix (`svc_rk_test_` + 6 characters)
 * is what logs and dashboards show.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { Environment } from '@svc/vocabulary'

export const API_KEY_PATTERN = /^svc_rk_(test|live)_[A-Za-z0-9_-]{32,}$/

const DISPLAY_PREFIX_LENGTH = 'svc_rk_test_'.length + 6

export function generateApiKey(environment: Environment): string {
  return `svc_rk_${environment}_${randomBytes(24).toString('base64url')}`
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

export function apiKeyDisplayPrefix(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH)
}

/** The environment of a well-formed key, or null when the string is not one. */
export function apiEnvironment(key: string): Environment | null {
  return (API_KEY_PATTERN.exec(key)?.[1] as Environment | undefined) ?? null
}
