/**
 * Operator commands for events (run with `npm run operator:events -- <command> …`). They act on the events domain
 * directly with MONGO_URL and WEBHOOK_SECRET_KEY (defaults: the dev command's local FerretDB and development key).
 *
 *   rotate-secret     a new webhook signing secret for an app environment, printed once; the previous ones keep
 *                     signing for the overlap (default 24 h, at most 7 days; 0 = they stop at once)
 *   list-deliveries   an app environment's delivery log, newest first (read with the full query: this command has no Redis)
 *   reencrypt-secrets every stored signing secret moved from WEBHOOK_SECRET_KEY_PREVIOUS to WEBHOOK_SECRET_KEY (the
 *                     last step of that key's rotation)
 */
import { loadConfig } from '@svc/config'
import { parseOperatorArgs, requiredOption, runOperatorCommand, UsageError, withDomain } from '@svc/subgraph-server'
import { createEventsModels, DELIVERY_STATUSES, type EventsModels } from '../models'
import { isDid, parseEnvironment } from '@svc/vocabulary'
import { listDeliveries, MAX_LIST_LIMIT, type DeliveryView } from '../domain/deliveries-log'
import { MAX_OVERLAP_SECONDS, reencryptSigningSecrets, rotateSigningSecret } from '../domain/signing-secrets'

const USAGE = `usage: npm run operator:events -- <command> [options]

  rotate-secret     --app <did> --env <test|live> [--overlap-hours 24] [--replace-unreadable]
                    (prints the new signing secret once; until the overlap ends every delivery is signed with the
                     new and the previous secrets; at most ${MAX_OVERLAP_SECONDS / 3600} hours; 0 = the previous ones stop now;
                     WEBHOOK_SECRET_KEY must decrypt the stored secrets, unless --replace-unreadable with
                     --overlap-hours 0: that key itself was replaced, and the secrets stored under the old one go)
  list-deliveries   --app <did> --env <test|live> [--status ${DELIVERY_STATUSES.join('|')}] [--limit 20]
                    (newest first, at most ${MAX_LIST_LIMIT})
  reencrypt-secrets (with WEBHOOK_SECRET_KEY_PREVIOUS set: every signing secret stored under it is stored under
                     WEBHOOK_SECRET_KEY instead; the secrets themselves do not change; safe to run again)

Add --json for machine-readable output.`

const options = {
  app: { type: 'string' },
  env: { type: 'string' },
  'overlap-hours': { type: 'string' },
  'replace-unreadable': { type: 'boolean' },
  status: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
} as const

/** The options each command takes (parseOperatorArgs refuses others, and any given twice). */
const TAKES = {
  'rotate-secret': ['app', 'env', 'overlap-hours', 'replace-unreadable'],
  'list-deliveries': ['app', 'env', 'status', 'limit'],
  'reencrypt-secrets': [],
} as const

function withEvents<T>(fn: (models: EventsModels) => Promise<T>): Promise<T> {
  return withDomain(loadConfig().mongoUrl, createEventsModels, fn)
}

function overlapSeconds(raw: string | undefined): number {
  if (raw === undefined) return 24 * 3600
  if (!/^\d+(\.\d+)?$/.test(raw)) throw new UsageError('--overlap-hours must be a number of hours (0 or more)')
  const seconds = Math.round(Number(raw) * 3600)
  // a fraction that rounds to 0 s would stop the previous secrets at once, which only an explicit 0 asks for
  if (seconds === 0 && Number(raw) !== 0) throw new UsageError('--overlap-hours must be 0 (the previous secrets stop now) or at least one second')
  if (seconds > MAX_OVERLAP_SECONDS) throw new UsageError(`--overlap-hours must be at most ${MAX_OVERLAP_SECONDS / 3600}`)
  return seconds
}

async function rotateSecret(values: { app?: string; env?: string; 'overlap-hours'?: string; 'replace-unreadable'?: boolean; json?: boolean }): Promise<string> {
  const appDid = requiredOption(values, 'app')
  if (!isDid(appDid)) throw new UsageError('--app must be an app DID')
  const environment = parseEnvironment(requiredOption(values, 'env'))
  const overlap = overlapSeconds(values['overlap-hours'])
  const { webhookSecretKey, previousWebhookSecretKey } = loadConfig().secrets
  const replaceUnreadable = values['replace-unreadable'] === true
  if (replaceUnreadable && overlap !== 0) throw new UsageError('--replace-unreadable needs --overlap-hours 0 (secrets nothing can read cannot sign during an overlap)')
  const issued = await withEvents((models) => rotateSigningSecret(models, { current: webhookSecretKey, previous: previousWebhookSecretKey }, appDid, environment, overlap, new Date(), { replaceUnreadable }))
  const previousUntil = issued.previousExpiresAt?.toISOString() ?? null
  if (values.json) {
    return JSON.stringify({ appDid, environment, secret: issued.secret, generation: issued.generation, hint: issued.hint, previousExpiresAt: previousUntil }, null, 2)
  }
  const lines = [
    `new signing secret for ${appDid} (${environment}), generation ${issued.generation}; shown once, store it now:`,
    `  ${issued.secret}`,
  ]
  if (!previousUntil) lines.push('there was no previous secret: this one signs every delivery from now on')
  else if (overlap === 0) lines.push('the previous secrets stopped signing now: only this one signs from now on')
  else lines.push(`the previous secrets keep signing until ${previousUntil} (${overlap / 3600} h); afterwards only this one signs`)
  return lines.join('\n')
}

function limitOf(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined
  if (!/^\d+$/.test(raw)) throw new UsageError('--limit must be a whole number')
  return Number(raw)
}

type ListedDelivery = Omit<DeliveryView, 'body'>

function describe(d: ListedDelivery): string {
  const when = [
    `created ${d.createdAt}`,
    d.lastAttemptAt && `last attempt ${d.lastAttemptAt}`,
    d.nextAttemptAt && d.status === 'pending' && `next ${d.nextAttemptAt}`,
    d.deliveredAt && `delivered ${d.deliveredAt}`,
    d.failedAt && `failed ${d.failedAt}`,
  ].filter(Boolean)
  const last = d.lastError ? `: ${d.lastError}` : d.lastStatusCode ? `: HTTP ${d.lastStatusCode}` : ''
  return `${d.id}  ${d.eventType}  ${d.status}  attempts ${d.attemptCount}${last}  (${when.join(', ')})`
}

async function listCommand(values: { app?: string; env?: string; status?: string; limit?: string; json?: boolean }): Promise<string> {
  const appDid = requiredOption(values, 'app')
  const environment = requiredOption(values, 'env')
  const rows = await withEvents(async (models): Promise<ListedDelivery[]> => {
    const views = await listDeliveries({ models }, { appDid, environment, status: values.status, limit: limitOf(values.limit) })
    return views.map(({ body: _body, ...rest }) => rest)
  })
  if (values.json) return JSON.stringify(rows, null, 2)
  if (rows.length === 0) return `no deliveries for ${appDid} in ${environment}${values.status ? ` with status ${values.status}` : ''}`
  return rows.map(describe).join('\n')
}

async function reencryptSecrets(values: { json?: boolean }): Promise<string> {
  const { webhookSecretKey: current, previousWebhookSecretKey: previous } = loadConfig().secrets
  if (previous === null) throw new UsageError('reencrypt-secrets needs WEBHOOK_SECRET_KEY_PREVIOUS: the key the secrets are stored under now')
  const report = await withEvents((models) => reencryptSigningSecrets(models, { current, previous }))
  if (values.json) return JSON.stringify(report, null, 2)
  const lines = [`${report.reencrypted} signing secrets re-encrypted under WEBHOOK_SECRET_KEY; ${report.current} were already under it`]
  if (report.unreadable > 0) lines.push(`${report.unreadable} cannot be read with either key: their app environments need rotate-secret --replace-unreadable --overlap-hours 0`)
  else lines.push('every signing secret is now under WEBHOOK_SECRET_KEY: WEBHOOK_SECRET_KEY_PREVIOUS can be removed')
  return lines.join('\n')
}

async function main(argv: string[]) {
  const { values, command } = parseOperatorArgs(argv, options, TAKES)
  if (!command || values.help) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  switch (command) {
    case 'rotate-secret':
      process.stdout.write(`${await rotateSecret(values)}\n`)
      return
    case 'list-deliveries':
      process.stdout.write(`${await listCommand(values)}\n`)
      return
    case 'reencrypt-secrets':
      process.stdout.write(`${await reencryptSecrets(values)}\n`)
      return
    default:
      throw new UsageError(`unknown command ${command}`)
  }
}

runOperatorCommand(main, USAGE)
