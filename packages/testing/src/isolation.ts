/** Per-test-file isolation: a fresh database name on the shared test FerretDB and a fresh Redis key prefix. */
import { randomBytes } from 'node:crypto'

export interface TestIsolation {
  mongoUrl: string
  redisUrl: string
  redisPrefix: string
  databaseName: string
}

export function isolate(label: string): TestIsolation {
  const base = process.env.SVC_TEST_MONGO_URL
  const redisUrl = process.env.SVC_TEST_REDIS_URL
  if (!base || !redisUrl) throw new Error('test isolation needs the jest global setup (SVC_TEST_MONGO_URL / SVC_TEST_REDIS_URL)')
  const suffix = randomBytes(4).toString('hex')
  const databaseName = `t_${label.replace(/[^a-z0-9]/gi, '_').slice(0, 30)}_${suffix}`
  const url = new URL(base)
  url.pathname = `/${databaseName}`
  return { mongoUrl: url.toString(), redisUrl, redisPrefix: `svctest:${databaseName}:`, databaseName }
}
