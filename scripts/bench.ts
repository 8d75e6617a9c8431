/**
 * `npm run bench`: throughput and latency baselines, each component in its own process as deployed.
 *
 *   getConfig via the full path   autocannon → XRPC adapter → gateway → apps subgraph → FerretDB
 *   the same lookup, subgraph     autocannon → apps subgraph (signed internal context) → FerretDB
 *   the same lookup, gateway      autocannon → gateway (adapter credential) → apps subgraph → FerretDB
 *
 * All at 50 connections in the same run, then the ratio of the first two. Every full-path request carries its own
 * freshly minted service-auth JWT (jti replay protection refuses reuse), minted before the run.
 * Results go to stdout and bench-results/latest.json. BENCH_REQUESTS and BENCH_SECONDS tune the size.
 */
import autocannon from 'autocannon'
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { connectApps, registerApp } from '@svc/apps'
import { CONTEXT_HEADER, signContext } from '@svc/internal-context'
import { generateDidKeyKeypair, mintServiceJwt } from '@svc/service-auth'
import { freePort, startFerretDb, type RunningFerretDb } from '@svc/testing'
import { ROOT, serviceComponents, startComponents } from './lib/components'

const CONNECTIONS = 50
const FULL_PATH_REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)

interface Measured {
  name: string
  requests: number
  rps: number
  p50: number
  p99: number
  non2xx: number
  errors: number
}

function summarize(name: string, r: autocannon.Result): Measured {
  return {
    name,
    requests: r.requests.total,
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  }
}

async function main() {
  let ferret: RunningFerretDb | undefined
  let mongoBase = process.env.MONGO_URL
  if (!mongoBase) {
    ferret = await startFerretDb()
    mongoBase = ferret.url
  }
  const mongoUrl = new URL(mongoBase)
  mongoUrl.pathname = `/bench_${randomBytes(3).toString('hex')}`
  const host = '127.0.0.1'
  const ports = {
    api: await freePort(),
    checkout: await freePort(),
    gateway: await freePort(),
    appsSubgraph: await freePort(),
    actorsSubgraph: await freePort(),
  }
  const secret = randomBytes(32).toString('hex')
  const serviceDid = 'did:web:svc.bench'
  const env = {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    MONGO_URL: mongoUrl.toString(),
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0',
    REDIS_PREFIX: `svcbench:${randomBytes(3).toString('hex')}:`,
    SERVICE_DID: serviceDid,
    HOST: host,
    API_PORT: String(ports.api),
    CHECKOUT_PORT: String(ports.checkout),
    GATEWAY_PORT: String(ports.gateway),
    APPS_SUBGRAPH_PORT: String(ports.appsSubgraph),
    GATEWAY_URL: `http://${host}:${ports.gateway}/graphql`,
    APPS_SUBGRAPH_URL: `http://${host}:${ports.appsSubgraph}/graphql`,
    ACTORS_SUBGRAPH_PORT: String(ports.actorsSubgraph),
    ACTORS_SUBGRAPH_URL: `http://${host}:${ports.actorsSubgraph}/graphql`,
    INTERNAL_CONTEXT_SECRET: secret,
    ADAPTER_GATEWAY_TOKEN: randomBytes(32).toString('hex'),
    OPERATOR_TOKEN: randomBytes(32).toString('hex'),
  }
  const running = await startComponents(serviceComponents({ host, ports }), env, { stdio: 'ignore' })
  const { conn, models } = await connectApps(mongoUrl.toString())
  try {
    const app = await generateDidKeyKeypair('ES256K')
    await registerApp(models, { did: app.did, environment: 'test', appUrl: 'https://bench.example', feeShareBps: 100 })

    process.stdout.write(`bench: minting ${FULL_PATH_REQUESTS} service-auth JWTs… `)
    const nsid = 'money.svc.app.getConfig'
    const tokens: string[] = []
    for (let i = 0; i < FULL_PATH_REQUESTS; i++) {
      tokens.push(await mintServiceJwt({ keypair: app.keypair, iss: app.did, aud: serviceDid, lxm: nsid, expiresInSeconds: 290 }))
    }
    process.stdout.write('done\n')

    const fullPath = await autocannon({
      url: `http://${host}:${ports.api}/xrpc/${nsid}?environment=test`,
      connections: CONNECTIONS,
      amount: tokens.length,
      requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${tokens.pop()}` } }) }],
    })

    const query = JSON.stringify({
      query: 'query GetConfig($environment: String!) { appConfig(environment: $environment) { appDid environment appUrl feeShareBps webhook { configured url paused } modules { tickets } ticketing { qrPasses walletPasses } ticketFee { bps flatAmount flatCurrency passToBuyer } } }',
      variables: { environment: 'test' },
    })
    const direct = await autocannon({
      url: `http://${host}:${ports.appsSubgraph}/graphql`,
      connections: CONNECTIONS,
      duration: SECONDS,
      method: 'POST',
      requests: [
        {
          setupRequest: (req) => ({
            ...req,
            body: query,
            headers: {
              ...req.headers,
              'content-type': 'application/json',
              [CONTEXT_HEADER]: signContext(secret, { principal: { kind: 'app', appDid: app.did }, requestId: randomBytes(8).toString('hex') }),
            },
          }),
        },
      ],
    })

    // The middle hop on its own: the same operation sent to the gateway as the adapter sends it.
    const viaGateway = await autocannon({
      url: `http://${host}:${ports.gateway}/graphql`,
      connections: CONNECTIONS,
      duration: SECONDS,
      method: 'POST',
      body: query,
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${env.ADAPTER_GATEWAY_TOKEN}`,
        'svc-caller': JSON.stringify({ kind: 'app', appDid: app.did }),
      },
    })

    const rows = [
      summarize('getConfig, full path (adapter → gateway → subgraph → FerretDB)', fullPath),
      summarize('appConfig, apps subgraph directly', direct),
      summarize('appConfig, gateway directly (→ subgraph → FerretDB; no JWT, no lexicon)', viaGateway),
    ]
    const [full, sub] = rows as [Measured, Measured, Measured]
    console.log(`\n${CONNECTIONS} connections, ${new Date().toISOString()}`)
    console.log('| path | requests | req/s | p50 ms | p99 ms | non-2xx | errors |')
    console.log('|---|---|---|---|---|---|---|')
    for (const r of rows) console.log(`| ${r.name} | ${r.requests} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} |`)
    const ratio = { throughput: +(full.rps / sub.rps).toFixed(2), p50: +(full.p50 / Math.max(sub.p50, 0.01)).toFixed(2), p99: +(full.p99 / Math.max(sub.p99, 0.01)).toFixed(2) }
    console.log(`\nfull path / subgraph: throughput ${ratio.throughput}x, p50 latency ${ratio.p50}x, p99 latency ${ratio.p99}x`)
    mkdirSync(join(ROOT, 'bench-results'), { recursive: true })
    writeFileSync(join(ROOT, 'bench-results', 'latest.json'), JSON.stringify({ at: new Date().toISOString(), connections: CONNECTIONS, rows, ratio }, null, 2))
    if (full.non2xx || full.errors) {
      console.error('bench: the full path answered errors; the numbers are not a baseline')
      process.exitCode = 1
    }
  } finally {
    await conn.dropDatabase().catch(() => undefined)
    await conn.close()
    await running.stop()
    await ferret?.stop('SIGKILL')
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
