/**
 * `npm run dev`: the whole service on this machine. Starts FerretDB unless MONGO_URL is set: its data in the
 * PostgreSQL database `svc_dev` of the machine's PostgreSQL (PG_URL), or in .data/ferretdb on SQLite when none answers; uses the machine's Redis (scripts/setup.sh starts one if none answers)
 * unless REDIS_URL is set, then every component (scripts/lib/components.ts: the subgraphs, the gateway, the XRPC
 * adapter, the events workers and the operators' board); Ctrl-C stops everything.
 */
import Redis from 'ioredis'
import { join } from 'node:path'
import { loadConfig } from '@svc/config'
import { redactUrl, startFerretDb, type RunningFerretDb } from '@svc/testing'
import { ROOT, serviceComponents, startComponents, type RunningComponents } from './lib/components'
import { devBanner } from './lib/dev-banner'

async function main() {
  const env: Record<string, string | undefined> = {
    NODE_ENV: process.env.NODE_ENV ?? 'development',
    // explicit development settings: local webhook receivers and did:web apps on localhost
    DEV_ALLOW_LOOPBACK_WEBHOOKS: process.env.DEV_ALLOW_LOOPBACK_WEBHOOKS ?? 'true',
    ALLOW_INSECURE_DID_WEB: process.env.ALLOW_INSECURE_DID_WEB ?? 'true',
  }
  const config = loadConfig({ ...process.env, ...env })

  let ferret: RunningFerretDb | undefined
  if (!process.env.MONGO_URL) {
    const port = Number(new URL(config.mongoUrl).port)
    ferret = await startFerretDb({ dataDir: join(ROOT, '.data', 'ferretdb'), port, temporary: false, pgDatabase: 'svc_dev', announce: true })
    console.log(`dev: FerretDB ${ferret.url} (${ferret.backend === 'postgresql' ? `data in PostgreSQL database ${ferret.pgDatabase}` : 'data in .data/ferretdb'})`)
  }
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true })
  await redis.connect()
  const policy = (await redis.config('GET', 'maxmemory-policy').catch(() => ['', 'unknown'])) as string[]
  console.log(`dev: Redis ${redactUrl(config.redisUrl)} (maxmemory-policy ${policy[1]})`)
  redis.disconnect()

  // eslint-disable-next-line prefer-const -- assigned once the shutdown handler that reads it is installed
  let running: RunningComponents | undefined
  let shuttingDown = false
  const shutdown = async (code: number) => {
    if (shuttingDown) return
    shuttingDown = true
    console.log('\ndev: stopping')
    await running?.stop()
    await ferret?.stop()
    process.exit(code)
  }
  process.on('SIGINT', () => void shutdown(0))
  process.on('SIGTERM', () => void shutdown(0))

  running = await startComponents(serviceComponents(config), env, {
    onUnexpectedExit: (name, code) => {
      console.error(`dev: ${name} exited (${code}); stopping everything`)
      void shutdown(1)
    },
  })

  console.log(`\n${devBanner(config)}`)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
