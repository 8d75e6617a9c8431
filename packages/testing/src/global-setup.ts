/**
 * Jest global setup: one FerretDB on a free port for the whole run (unless MONGO_URL points at a real MongoDB), its
 * data in a PostgreSQL database of the run's own on the machine's PostgreSQL (PG_URL), or in a temporary SQLite
 * folder when none answers; both are removed at teardown. Redis database 15 of the machine's Redis (unless REDIS_URL
 * is set). Each test file then uses its own database name and Redis key prefix.
 */
import { startFerretDb } from './ferretdb'

export default async function globalSetup(): Promise<void> {
  if (!process.env.MONGO_URL) {
    const ferret = await startFerretDb({ databasePrefix: 'svc_test_' })
    ;(globalThis as { __svcFerret?: unknown }).__svcFerret = ferret
    process.env.SVC_TEST_MONGO_URL = ferret.url
  } else {
    process.env.SVC_TEST_MONGO_URL = process.env.MONGO_URL
  }
  process.env.SVC_TEST_REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/15'
}
