/**
 * Operator commands (run with `npm run operator -- <command> …`). They act on the apps domain directly
 * with MONGO_URL (default: the dev command's local FerretDB).
 *
 *   quickstart          a did:key app registered in test with an all-permission API key, and how to call the API
 *   register-app        register an app DID for an environment (appUrl, feeShareBps, platform ticket fee rates)
 *   issue-key           issue a restricted API key (printed once, stored hashed)
 *   revoke-key          revoke an API key by its id
 *   generate-did-key    a did:key keypair for local use
 *   mint-jwt            a service-auth JWT for a did:key app (for curl)
 */
import { ContractError } from '@svc/errors'
import { parseArgs } from 'node:util'
import { loadConfig } from '@svc/config'
import { DEFAULT_MAX_LIFETIME_SECONDS, generateDidKeyKeypair, keypairFromPrivateKeyHex, mintServiceJwt, type ServiceJwtAlg } from '@svc/service-auth'
import { parseOperatorArgs, requiredOption, runOperatorCommand, UsageError, withDomain } from '@svc/subgraph-server'
import { API_KEY_PERMISSIONS, createAppsModels } from '../models'
import type { AppsDomain } from '../domain/context'
import { issueApiKey, revokeApiKey } from '../domain/api-keys'
import { registerApp } from '../domain/registration'
import { isDid, parseEnvironment } from '@svc/vocabulary'


const USAGE = `usage: npm run operator -- <command> [options]

  quickstart        [--env test] [--app-url http://localhost:3000] [--alg ES256K|ES256]
  register-app      --did <did> --env <test|live> --app-url <url> [--fee-share-bps 0]
                    [--ticket-fee-bps 0] [--ticket-fee-flat 0] [--ticket-fee-currency usd] [--name <text>]
  issue-key         --did <did> --env <test|live> [--permissions <p1,p2,…>]
                    (among ${API_KEY_PERMISSIONS.join(', ')}; default app.config.read)
  revoke-key        --key-id <key_…>
  generate-did-key  [--alg ES256K|ES256]
  mint-jwt          --did <did:key:…> --private-key <hex> --lxm <nsid> [--alg ES256K|ES256] [--aud <service DID>] [--expires-in 60]
                    (--did is the key's did:key; --expires-in 1 to 300 seconds)

Add --json for machine-readable output.`

const options = {
  did: { type: 'string' },
  env: { type: 'string' },
  'app-url': { type: 'string' },
  'fee-share-bps': { type: 'string' },
  'ticket-fee-bps': { type: 'string' },
  'ticket-fee-flat': { type: 'string' },
  'ticket-fee-currency': { type: 'string' },
  name: { type: 'string' },
  permissions: { type: 'string' },
  'key-id': { type: 'string' },
  alg: { type: 'string' },
  'private-key': { type: 'string' },
  lxm: { type: 'string' },
  aud: { type: 'string' },
  'expires-in': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
} as const

/** The options each command takes (parseOperatorArgs refuses others, and any given twice). */
const TAKES = {
  quickstart: ['env', 'app-url', 'alg'],
  'register-app': ['did', 'env', 'app-url', 'fee-share-bps', 'ticket-fee-bps', 'ticket-fee-flat', 'ticket-fee-currency', 'name'],
  'issue-key': ['did', 'env', 'permissions'],
  'revoke-key': ['key-id'],
  'generate-did-key': ['alg'],
  'mint-jwt': ['did', 'private-key', 'lxm', 'alg', 'aud', 'expires-in'],
} as const

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values']


function int(values: Values, name: keyof Values, fallback: number): number {
  const v = values[name]
  if (v === undefined) return fallback
  if (typeof v !== 'string' || !/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number`)
  return Number(v)
}

function optionalInt(values: Values, name: keyof Values): number | undefined {
  return values[name] === undefined ? undefined : int(values, name, 0)
}

function alg(values: Values): ServiceJwtAlg {
  const a = values.alg ?? 'ES256K'
  if (a !== 'ES256K' && a !== 'ES256') throw new UsageError('--alg must be ES256K or ES256')
  return a
}


function print(values: Values, human: string, json: unknown) {
  process.stdout.write(values.json ? `${JSON.stringify(json, null, 2)}\n` : `${human}\n`)
}

/** The operator's use cases read the models alone, no service settings. */
function withApps<T>(fn: (d: Pick<AppsDomain, 'models'>) => Promise<T>): Promise<T> {
  return withDomain(loadConfig().mongoUrl, createAppsModels, (models) => fn({ models }))
}

async function main(argv: string[]) {
  const { values, command } = parseOperatorArgs(argv, options, TAKES)
  if (!command || values.help) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  const config = loadConfig()

  switch (command) {
    case 'generate-did-key': {
      const key = await generateDidKeyKeypair(alg(values))
      print(values, `did:         ${key.did}\nprivate key: ${key.privateKeyHex}  (keep it secret)\nalg:         ${alg(values)}`, {
        did: key.did,
        privateKeyHex: key.privateKeyHex,
        alg: alg(values),
      })
      return
    }
    case 'mint-jwt': {
      // what the service would refuse is refused here, saying why, rather than minted
      const did = requiredOption(values, 'did')
      const keypair = await keypairFromPrivateKeyHex(requiredOption(values, 'private-key'), alg(values)).catch(() => {
        throw new UsageError(`--private-key must be a ${alg(values)} private key: 32 bytes of hex`)
      })
      if (keypair.did() !== did) throw new UsageError(`--did ${did} does not match the key, whose did:key is ${keypair.did()}`)
      const aud = values.aud ?? config.serviceDid
      if (!isDid(aud)) throw new UsageError('--aud must be a DID (the service\'s)')
      const expiresInSeconds = int(values, 'expires-in', 60)
      if (expiresInSeconds < 1 || expiresInSeconds > DEFAULT_MAX_LIFETIME_SECONDS) throw new UsageError(`--expires-in must be from 1 to ${DEFAULT_MAX_LIFETIME_SECONDS} seconds (the service refuses longer)`)
      const jwt = await mintServiceJwt({ keypair, iss: did, aud, lxm: requiredOption(values, 'lxm'), expiresInSeconds })
      print(values, jwt, { jwt })
      return
    }
    case 'register-app': {
      const view = await withApps((d) =>
        registerApp(d, {
          did: requiredOption(values, 'did'),
          environment: requiredOption(values, 'env'),
          appUrl: requiredOption(values, 'app-url'),
          // an option left out keeps the app environment's rate (0, or usd, on a first registration)
          feeShareBps: optionalInt(values, 'fee-share-bps'),
          name: values.name,
          ticketFee: {
            bps: optionalInt(values, 'ticket-fee-bps'),
            flatAmount: optionalInt(values, 'ticket-fee-flat'),
            flatCurrency: values['ticket-fee-currency'],
          },
        }),
      )
      print(values, `registered ${view.appDid} in ${view.environment} (appUrl ${view.appUrl}, feeShareBps ${view.feeShareBps})`, view)
      return
    }
    case 'issue-key': {
      const issued = await withApps((d) =>
        issueApiKey(d, {
          appDid: requiredOption(values, 'did'),
          environment: parseEnvironment(requiredOption(values, 'env')),
          permissions: (values.permissions ?? 'app.config.read').split(',').map((p) => p.trim()),
        }),
      )
      print(
        values,
        `API key (shown once, store it now): ${issued.key}\nkey id: ${issued.keyId}\npermissions: ${issued.permissions.join(', ')}`,
        issued,
      )
      return
    }
    case 'revoke-key': {
      const keyId = requiredOption(values, 'key-id')
      const revoked = await withApps((d) => revokeApiKey(d, keyId))
      // a refusal, printed as every command's is (`<Code>: <message>`, exit 1)
      if (!revoked) throw new ContractError('NotFound', `no active key with the id ${keyId}`)
      print(values, 'revoked', { revoked })
      return
    }
    case 'quickstart': {
      const environment = parseEnvironment(values.env ?? 'test')
      const key = await generateDidKeyKeypair(alg(values))
      const { registered, issued } = await withApps(async (d) => ({
        registered: await registerApp(d, { did: key.did, environment, appUrl: values['app-url'] ?? 'http://localhost:3000', feeShareBps: 0 }),
        issued: await issueApiKey(d, { appDid: key.did, environment, permissions: [...API_KEY_PERMISSIONS] }),
      }))
      // the URL as registered (its origin), as getConfig answers it
      const appUrl = registered.appUrl
      const result = { did: key.did, privateKeyHex: key.privateKeyHex, alg: alg(values), environment, appUrl, apiKey: issued.key, keyId: issued.keyId }
      print(
        values,
        [
          `app DID:      ${key.did}`,
          `private key:  ${key.privateKeyHex}  (${alg(values)}; keep it secret)`,
          `environment:  ${environment}   appUrl: ${appUrl}`,
          `API key:      ${issued.key}  (shown once; permissions: all four)`,
          '',
          'Call the API:',
          `  export APP_DID=${key.did} APP_KEY=${key.privateKeyHex} API_KEY=${issued.key}`,
          `  JWT=$(npm run -s operator -- mint-jwt --did $APP_DID --private-key $APP_KEY --alg ${alg(values)} --lxm money.svc.app.getConfig)`,
          `  curl -s "${config.baseUrl}/xrpc/money.svc.app.getConfig?environment=${environment}" -H "Authorization: Bearer $JWT"`,
          `  curl -s "${config.checkoutUrl}/api/app/developer/config?app=$APP_DID&environment=${environment}" -H "Authorization: Bearer $API_KEY"`,
        ].join('\n'),
        result,
      )
      return
    }
    default:
      throw new UsageError(`unknown command ${command}`)
  }
}

runOperatorCommand(main, USAGE)
