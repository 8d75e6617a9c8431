/**
 * Operator-side registration of an app DID for an environment: the registered app origin, the app's
 * fee share and the platform-owned ticket fee rates. Re-registering updates the operator-owned fields it is given
 * and keeps the others (a re-registration that changes only the origin must not zero the platform's fees), and keeps
 * what the app configured itself. A new registration takes 0 for the rates not given, and `usd`.
 */
import { ContractError } from '@svc/errors'
import { isDuplicateKeyError } from '../models'
import type { AppsDomain } from './context'
import { toAppConfigView, type AppConfigView } from './app-config-view'
import { inAppEnvironmentTurn } from './app-environment'
import { isCurrencyCode, isDid, parseDisplayName, parseEnvironment } from '@svc/vocabulary'

export interface RegisterAppInput {
  did: string
  environment: string
  appUrl: string
  feeShareBps?: number
  name?: string
  ticketFee?: { bps?: number; flatAmount?: number; flatCurrency?: string }
}

function assertInt(value: number, name: string, min: number, max: number) {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ContractError('InvalidRequest', `${name} must be an integer from ${min} to ${max}`)
  }
}

export function normalizeAppUrl(raw: string): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ContractError('InvalidRequest', 'appUrl must be a URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ContractError('InvalidRequest', 'appUrl must be http(s)')
  return url.origin
}

export async function registerApp(d: Pick<AppsDomain, 'models' | 'logger'>, input: RegisterAppInput): Promise<AppConfigView> {
  if (!isDid(input.did)) throw new ContractError('InvalidRequest', 'did must be a DID')
  const environment = parseEnvironment(input.environment)
  // the rates given are set; those not given keep their value, or take their default on a first registration
  const given: Record<string, unknown> = {}
  const defaults: Record<string, unknown> = {}
  const rate = (path: string, value: number | string | undefined, fallback: number | string, check: (v: never) => void) => {
    if (value === undefined) defaults[path] = fallback
    else {
      check(value as never)
      given[path] = value
    }
  }
  rate('feeShareBps', input.feeShareBps, 0, (v: number) => assertInt(v, 'feeShareBps', 0, 10000))
  rate('ticketFee.bps', input.ticketFee?.bps, 0, (v: number) => assertInt(v, 'ticketFee.bps', 0, 10000))
  rate('ticketFee.flatAmount', input.ticketFee?.flatAmount, 0, (v: number) => assertInt(v, 'ticketFee.flatAmount', 0, 100_000_00))
  rate('ticketFee.flatCurrency', input.ticketFee?.flatCurrency, 'usd', (v: string) => {
    if (!isCurrencyCode(v)) throw new ContractError('InvalidRequest', 'ticketFee.flatCurrency must be a lowercase ISO 4217 code')
  })
  // the flat amount is in its currency's minor units: a currency set alone would keep the amount and change its worth
  // (30 usd cents become 30 yen)
  if (input.ticketFee?.flatCurrency !== undefined && input.ticketFee.flatAmount === undefined) {
    throw new ContractError('InvalidRequest', 'give ticketFee.flatAmount with ticketFee.flatCurrency: the amount is in that currency\'s minor units')
  }
  const appUrl = normalizeAppUrl(input.appUrl)
  // shown to creators as who asks to take payments for them (the dashboard)
  const name = parseDisplayName(input.name, 'name')

  // Upserts race on the unique indexes; the loser of a race simply retries as an update.
  for (let attempt = 0; ; attempt++) {
    try {
      await d.models.App.updateOne(
        { did: input.did },
        name === undefined ? { $setOnInsert: { did: input.did, name: null } } : { $set: { name }, $setOnInsert: { did: input.did } },
        { upsert: true },
      )
      const doc = await inAppEnvironmentTurn(d, input.did, environment, () =>
        d.models.AppEnvironment.findOneAndUpdate(
          { appDid: input.did, environment },
          {
            $set: { appUrl, ...given },
            $setOnInsert: { appDid: input.did, environment, status: 'active', ...defaults },
          },
          { upsert: true, returnDocument: 'after', lean: true, setDefaultsOnInsert: true },
        ),
      )
      if (!doc) throw new Error('registration upsert returned nothing')
      return toAppConfigView(doc)
    } catch (err) {
      if (isDuplicateKeyError(err) && attempt < 3) continue
      throw err
    }
  }
}
