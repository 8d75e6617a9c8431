/**
 * Restricted API keys on the developer utility routes (`Authorization: Bearer svc_rk_<env>_…`).
 * The adapter only checks the form and hashes the key; the apps subgraph decides whether the key is
 * known, unrevoked, for this app and environment, and holds the permission. Webhook signing secrets
 * and anything else are refused here.
 */
import { createHash } from 'node:crypto'
import { ContractError } from '@svc/errors'

const API_KEY_PATTERN = /^svc_rk_(test|live)_[A-Za-z0-9_-]{32,}$/

export interface PresentedApiKey {
  keyHash: string
  keyPrefix: string
  environment: 'test' | 'live'
}

export function presentedApiKey(authorization: string | undefined): PresentedApiKey {
  if (!authorization) throw new ContractError('Unauthorized', 'an API key is required: Authorization: Bearer svc_rk_…')
  const token = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1]
  if (!token) throw new ContractError('Unauthorized', 'the Authorization header must be `Bearer <API key>`')
  if (token.startsWith('whsec_')) {
    throw new ContractError('Unauthorized', 'webhook signing secrets only verify deliveries; use a restricted API key')
  }
  const match = API_KEY_PATTERN.exec(token)
  if (!match) throw new ContractError('Unauthorized', 'not a restricted API key (svc_rk_test_… or svc_rk_live_…)')
  return {
    keyHash: createHash('sha256').update(token).digest('hex'),
    keyPrefix: token.slice(0, 'svc_rk_test_'.length + 6),
    environment: match[1] as 'test' | 'live',
  }
}

/** The environment an API key names, when the header holds one (for the request log). */
export function apiKeyEnvironment(authorization: string | undefined): 'test' | 'live' | null {
  const m = /^Bearer\s+svc_rk_(test|live)_/i.exec(authorization ?? '')
  return (m?.[1] as 'test' | 'live' | undefined) ?? null
}
