/**
 * Operator commands for actors (run with `npm run operator:actors -- <command> …`). They act on the actors
 * domain directly with MONGO_URL (default: the dev command's local FerretDB). A separate command from
 * `npm run operator` so that the apps workspace never imports the actors models.
 *
 *   create-creator      create (or update) a creator or project of a DID in an environment
 *   set-payout-status   change the payout status of an existing actor
 *   dashboard-link      print a single-use dashboard sign-in link for an existing actor (15 minutes)
 *   end-dashboard-sessions  sign an actor out of the dashboard everywhere
 */
import Redis from 'ioredis'
import { loadConfig } from '@svc/config'
import { ContractError } from '@svc/errors'
import { createDashboardSessions, type DashboardSessions, isDashboardPath, signInUrl } from '@svc/dashboard-session'
import { type Environment, parseEnvironment } from '@svc/vocabulary'
import { parseOperatorArgs, requiredOption, runOperatorCommand, UsageError, withDomain } from '@svc/subgraph-server'
import { createActorsModels, PAYOUT_STATUSES } from '../models'
import type { ActorsDomain } from '../domain/context'
import { findActor } from '../domain/queries'
import { setPayoutStatus } from '../domain/set-payout-status'
import { upsertActor } from '../domain/upsert-actor'
import type { ActorView } from '../domain/views'

const USAGE = `usage: npm run operator:actors -- <command> [options]

  create-creator     --did <did> --env <test|live> [--kind creator|project] [--display-name <text>]
                     [--payment-types tip,shop] [--payout-status ${PAYOUT_STATUSES.join('|')}]
                     (creates the actor, or updates the options given of an existing one;
                      a new actor starts as onboarding-required)
  set-payout-status  --did <did> --env <test|live> --status <${PAYOUT_STATUSES.join('|')}>
  dashboard-link     --did <did> --env <test|live> [--next /dashboard/onboarding/<apr_id>]
                     (a single-use sign-in link to the creator dashboard, valid 15 minutes;
                      --next is the dashboard page it opens, e.g. an app's onboardingUrl path)
  end-dashboard-sessions --did <did> --env <test|live>
                     (signs the actor out of the dashboard everywhere: every session and every
                      unused sign-in link of it in that environment stops working; new links work)

Add --json for machine-readable output.`

const options = {
  did: { type: 'string' },
  env: { type: 'string' },
  kind: { type: 'string' },
  'display-name': { type: 'string' },
  'payment-types': { type: 'string' },
  'payout-status': { type: 'string' },
  status: { type: 'string' },
  next: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
} as const

/** The options each command takes (parseOperatorArgs refuses others, and any given twice). */
const TAKES = {
  'create-creator': ['did', 'env', 'kind', 'display-name', 'payment-types', 'payout-status'],
  'set-payout-status': ['did', 'env', 'status'],
  'dashboard-link': ['did', 'env', 'next'],
  'end-dashboard-sessions': ['did', 'env'],
} as const

function describe(a: ActorView): string {
  return `${a.kind} ${a.did} in ${a.environment}: payout status ${a.payoutStatus} (payable: ${a.payable}), payment types ${a.paymentTypes.join(', ')}${a.displayName ? `, "${a.displayName}"` : ''}`
}

function withActors<T>(fn: (d: ActorsDomain) => Promise<T>): Promise<T> {
  return withDomain(loadConfig().mongoUrl, createActorsModels, (models) => fn({ models }))
}

/** The actor of that environment (the dashboard is an actor's), else ActorNotFound saying how to make one. */
async function dashboardActor(did: string, environment: Environment): Promise<void> {
  await withActors((d) => findActor(d, environment, did)).catch((err: unknown) => {
    // a creator or an organizer signs in once it is an actor of that environment: say how to make one
    if (err instanceof ContractError && err.code === 'ActorNotFound') throw new ContractError('ActorNotFound', `${err.message}: create it first with create-creator --did ${did} --env ${environment}`)
    throw err
  })
}

/** The dashboard's sessions in Redis, for one change whose failure says what was not done. */
async function withDashboardSessions<T>(notDone: string, fn: (sessions: DashboardSessions) => Promise<T>): Promise<T> {
  const config = loadConfig()
  // a Redis that never answers ends the command after 5 s rather than keeping it waiting
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 2, connectTimeout: 5000, commandTimeout: 5000 })
  redis.on('error', () => undefined) // the command's own failure says it, once
  try {
    return await fn(createDashboardSessions({ redis, prefix: `${config.redisPrefix}dash:` })).catch((err: unknown) => {
      // ioredis's own words ("Reached the max retries per request limit") do not say which store was away
      throw new ContractError('ServiceUnavailable', `Redis (REDIS_URL) did not answer, so ${notDone}: ${(err as Error).message}`)
    })
  } finally {
    redis.disconnect()
  }
}

/** Signs the creator in to the dashboard: the link is the only way in locally (production: atproto OAuth). */
async function dashboardLink(did: string, env: string, next: string | undefined, json: boolean | undefined): Promise<string> {
  const environment = parseEnvironment(env)
  await dashboardActor(did, environment)
  if (next !== undefined && !isDashboardPath(next)) throw new UsageError('--next must be a dashboard path such as /dashboard/onboarding/apr_…')
  const { token, expiresAt } = await withDashboardSessions('no link was made', (sessions) => sessions.issueLoginLink({ actorDid: did, environment }))
  const url = signInUrl(loadConfig().dashboardUrl, token, next)
  return json ? JSON.stringify({ url, expiresAt: expiresAt.toISOString() }, null, 2) : `open within 15 minutes (once): ${url}`
}

/** Signs the actor out of the dashboard everywhere (a lost device, a link sent to the wrong person). */
async function endDashboardSessions(did: string, env: string, json: boolean | undefined): Promise<string> {
  const environment = parseEnvironment(env)
  await dashboardActor(did, environment)
  await withDashboardSessions('no session was ended', (sessions) => sessions.endSessions({ actorDid: did, environment }))
  return json
    ? JSON.stringify({ did, environment, ended: true }, null, 2)
    : `every dashboard session and unused sign-in link of ${did} in ${environment} is ended (a new dashboard-link signs in again)`
}

async function main(argv: string[]) {
  const { values, command } = parseOperatorArgs(argv, options, TAKES)
  if (!command || values.help) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  let actor: ActorView
  switch (command) {
    case 'create-creator': {
      const input = {
        did: requiredOption(values, 'did'),
        environment: requiredOption(values, 'env'),
        kind: values.kind,
        displayName: values['display-name'],
        paymentTypes: values['payment-types']?.split(',').map((t) => t.trim()),
        payoutStatus: values['payout-status'],
      }
      actor = await withActors((d) => upsertActor(d, input))
      break
    }
    case 'set-payout-status': {
      const input = { did: requiredOption(values, 'did'), environment: requiredOption(values, 'env'), status: requiredOption(values, 'status') }
      actor = await withActors((d) => setPayoutStatus(d, input))
      break
    }
    case 'dashboard-link': {
      process.stdout.write(`${await dashboardLink(requiredOption(values, 'did'), requiredOption(values, 'env'), values.next, values.json)}\n`)
      return
    }
    case 'end-dashboard-sessions': {
      process.stdout.write(`${await endDashboardSessions(requiredOption(values, 'did'), requiredOption(values, 'env'), values.json)}\n`)
      return
    }
    default:
      throw new UsageError(`unknown command ${command}`)
  }
  process.stdout.write(values.json ? `${JSON.stringify(actor, null, 2)}\n` : `${describe(actor)}\n`)
}

runOperatorCommand(main, USAGE)
