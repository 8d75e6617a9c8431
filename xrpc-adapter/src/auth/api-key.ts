/**
 * Restricted API keys on the developer utility routes (`Authorization: Bearer svc_rk_<env>_…`).
 * The adapter only checks the form and hashes the key; the apps subgraph decides whether the key is
 * known, unrevoked, for this app and environment, and holds the permission. Webhook signing secrets
 * and anything else are refused here.
 */
import { apiKeyDisplayPrefix, apiEnvironment, hashApiKey } from '@svc/api-keys'
import type { Environment } from '@svc/vocabulary'
import { ContractError } from '@svc/errors'

export interface PresentedApiKey {
  keyHash: string
  keyPrefix: string
  environment: Environment
}

export function presentedApiKey(authorization: string | undefined): PresentedApiKey {
  if (!authorization) throw new ContractError('Unauthorized', 'an API key is required: Authorization: Bearer svc_rk_…')
  const token = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1]
  if (!token) throw new ContractError('Unauthorized', 'the Authorization header must be `Bearer <API key>`')
  if (token.startsWith('whsec_')) {
    throw new ContractError('Unauthorized', 'webhook signing secrets only verify deliveries; use a restricted API key')
  }
  const environment = apiEnvironment(token)
  if (!environment) {
    // a key cut short or mangled in a copy says so, rather than that it is not a key at all
    if (/^svc_rk_(test|live)_/.test(token)) throw new ContractError('Unauthorized', 'malformed API key: svc_rk_test_… or svc_rk_live_… is followed by 32 characters (A-Z, a-z, 0-9, - and _); copy it whole')
    throw new ContractError('Unauthorized', 'not a restricted API key (svc_rk_test_… or svc_rk_live_…)')
  }
  return { keyHash: hashApiKey(token), keyPrefix: apiKeyDisplayPrefix(token), environment }
}

/** What the request log may show of the key in a header: its environment and display prefix, never the key. */
export function apiKeyForLog(authorization: string | undefined): { environment: Environment; keyPrefix: string } | null {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1]
  const environment = token ? apiEnvironment(token) : null
  return token && environment ? { environment, keyPrefix: apiKeyDisplayPrefix(token) } : null
}

/** The hash of a well-formed restricted API key in the header, which the utility routes' rate limit counts under. */
export function apiKeyHashForLimit(authorization: string | undefined): string | null {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1]
  return token && apiEnvironment(token) ? hashApiKey(token) : null
}
