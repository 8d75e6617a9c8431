/**
 * Restricted API keys for the developer utility routes: `svc_rk_<env>_<random>`, bound to one app and
 * environment, with a subset of the four contract permissions. Shown once, stored as SHA-256.
 */
import { randomBytes } from 'node:crypto'
import { apiKeyDisplayPrefix, generateApiKey, hashApiKey } from '@svc/api-keys'
import { ContractError } from '@svc/errors'
import { API_KEY_PERMISSIONS, type ApiKeyPermission } from '../models'
import type { Environment } from '@svc/vocabulary'
import type { AppsDomain } from './context'

export function isPermission(value: string): value is ApiKeyPermission {
  return (API_KEY_PERMISSIONS as readonly string[]).includes(value)
}

export async function issueApiKey(
  d: Pick<AppsDomain, 'models'>,
  opts: { appDid: string; environment: Environment; permissions: readonly string[] },
): Promise<{ key: string; keyId: string; keyPrefix: string; permissions: ApiKeyPermission[] }> {
  const permissions = [...new Set(opts.permissions)]
  const unknown = permissions.filter((p) => !isPermission(p))
  if (unknown.length || permissions.length === 0) {
    throw new ContractError('InvalidRequest', `permissions must be among ${API_KEY_PERMISSIONS.join(', ')}`)
  }
  const exists = await d.models.AppEnvironment.exists({ appDid: opts.appDid, environment: opts.environment })
  if (!exists) throw new ContractError('AppEnvironmentNotConfigured', `app ${opts.appDid} has no ${opts.environment} configuration`)
  const key = generateApiKey(opts.environment)
  const keyId = `key_${randomBytes(10).toString('hex')}`
  const keyPrefix = apiKeyDisplayPrefix(key)
  await d.models.ApiKey.create({
    keyId,
    appDid: opts.appDid,
    environment: opts.environment,
    keyHash: hashApiKey(key),
    keyPrefix,
    permissions,
  })
  return { key, keyId, keyPrefix, permissions: permissions as ApiKeyPermission[] }
}

export async function revokeApiKey(d: Pick<AppsDomain, 'models'>, keyId: string): Promise<boolean> {
  const res = await d.models.ApiKey.updateOne({ keyId, revokedAt: null }, { $set: { revokedAt: new Date() } })
  return res.modifiedCount > 0
}

/** The key behind a hash, if it exists and is not revoked. */
export async function findActiveKey(d: Pick<AppsDomain, 'models'>, keyHash: string) {
  const key = await d.models.ApiKey.findOne({ keyHash }).lean()
  if (!key || key.revokedAt) return null
  return key
}
