/**
 * Runs a README walk-through script (`scripts/example-*.ts`) as a developer does, in its own process, pointed at the
 * test stack of this process; returns what it printed. Not a test file itself.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { TestStack } from '../../stack'

const run = promisify(execFile)
const ROOT = join(__dirname, '..', '..', '..')

export async function runExample(stack: TestStack, script: string, args: string[] = []): Promise<string> {
  const env = {
    ...process.env,
    NODE_ENV: 'test',
    MONGO_URL: stack.mongoUrl,
    REDIS_URL: stack.redisUrl,
    REDIS_PREFIX: stack.redisPrefix,
    BASE_URL: stack.apiUrl,
    CHECKOUT_URL: stack.checkoutUrl,
    DASHBOARD_URL: `${stack.checkoutUrl}/dashboard`,
    SERVICE_DID: stack.serviceDid,
  }
  const { stdout } = await run(join(ROOT, 'node_modules', '.bin', 'tsx'), [join(ROOT, 'scripts', script), ...args], { env, timeout: 120_000 })
  return stdout
}
