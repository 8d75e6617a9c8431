/**
 * Each process holds only the secrets it uses (packages/config, COMPONENT_SECRETS): its main reads no other, its
 * container in docker-compose.yml is given no other, and in production it needs no other. A compromised process then
 * holds no more than it needs: the internet-facing adapter cannot sign as the gateway or a subgraph, nor call itself
 * an operator.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { COMPONENT_SECRETS, componentSecretVariables, loadConfig, type Component, type Secret } from '@svc/config'

const root = join(__dirname, '..')
const MAINS: Record<Component, string> = {
  gateway: 'gateway/src/main.ts',
  'xrpc-adapter': 'xrpc-adapter/src/main.ts',
  'events-workers': 'services/events/src/workers/main.ts',
  board: 'services/events/src/board/main.ts',
  apps: 'services/apps/src/main.ts',
  actors: 'services/actors/src/main.ts',
  payments: 'services/payments/src/main.ts',
  events: 'services/events/src/main.ts',
  tickets: 'services/tickets/src/main.ts',
}
const COMPOSE_SERVICE: Record<Component, string> = { ...Object.fromEntries(Object.keys(MAINS).map((c) => [c, c])), 'events-workers': 'workers' } as Record<Component, string>
const components = Object.keys(MAINS) as Component[]

const token = (c: string) => c.repeat(40)
/** A production environment with exactly `secrets` set (to values that pass every check). */
function production(secrets: readonly Secret[]): Record<string, string> {
  return Object.fromEntries([['NODE_ENV', 'production'], ['SERVICE_DID', 'did:web:api.svc.example'], ...secrets.map((s, i) => [s, s === 'SERVICE_SIGNING_KEY' ? 'ab'.repeat(32) : token(String.fromCharCode(97 + i))])])
}

test.each(components)('%s runs in production with its own secrets only, and reading another fails at once', (component) => {
  const held: readonly Secret[] = COMPONENT_SECRETS[component]
  const config = loadConfig(production(held), component)
  for (const secret of held) {
    const without = production(held.filter((s) => s !== secret))
    expect(() => loadConfig(without, component)).toThrow(new RegExp(`${secret}.*must be set in production`, 's'))
  }
  if (!held.includes('OPERATOR_TOKEN')) expect(() => config.secrets.operatorToken).toThrow(`${component} does not hold OPERATOR_TOKEN`)
  if (!held.includes('GATEWAY_CONTEXT_KEY')) expect(() => config.secrets.callerKeys.gateway).toThrow(`${component} does not hold GATEWAY_CONTEXT_KEY`)
  // nothing it does not hold is reachable by enumerating its configuration
  expect(JSON.stringify(config.secrets)).not.toMatch(/development-only-secret/)
})

test.each(components)("%s's main reads only the secrets it holds", (component) => {
  const source = readFileSync(join(root, MAINS[component]), 'utf8')
  const reads = [...source.matchAll(/config\.secrets\.(\w+)(?:\.(\w+)|\['([\w-]+)'\])?/g)]
  expect(reads.length).toBeGreaterThan(0)
  const config = loadConfig(production(COMPONENT_SECRETS[component]), component)
  for (const [text, field, member, bracketed] of reads) {
    const value = (config.secrets as unknown as Record<string, Record<string, unknown>>)[field!]
    const read = () => (member ?? bracketed ? value![(member ?? bracketed)!] : value)
    expect({ text, read: read() === undefined ? 'undefined' : 'ok' }).toEqual({ text, read: 'ok' })
  }
})

describe('docker-compose.yml', () => {
  const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, { environment?: Record<string, string> }> }
  test.each(components)('gives %s exactly the secrets it holds', (component) => {
    const env = compose.services[COMPOSE_SERVICE[component]]?.environment ?? {}
    const secretVariables = new Set(components.flatMap(componentSecretVariables))
    const given = Object.keys(env).filter((variable) => secretVariables.has(variable)).sort()
    expect(given).toEqual(componentSecretVariables(component).sort())
  })
})
