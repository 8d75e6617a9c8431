/**
 * A subgraph that is not answering when the gateway starts (it starts more slowly than the gateway): the gateway is
 * not ready, and its fields are unknown, until the subgraph answers; then the gateway composes it in and is ready.
 * Before, the gateway gave up after ten seconds of retries and answered ready for good without it, every request for
 * its fields failing. The adapter's readiness check on the gateway follows the gateway's. Real subgraphs and the real
 * gateway on loopback.
 */
import gql from 'graphql-tag'
import type { FastifyInstance } from 'fastify'
import { createGatewayClient, type GatewayClient } from '@svc/gateway-client'
import { startSubgraph, type RunningSubgraph, type SubgraphContext } from '@svc/subgraph-server'
import { freePort } from '@svc/testing'
import { buildGateway } from '@svc/gateway'
import { upstreamReady } from '@svc/operations'
import { newSecrets, testLogger } from './helpers'

const secrets = newSecrets()
const as = { principal: { kind: 'app', appDid: 'did:web:late.example.com' } as const, requestId: 'req-late' }
const subgraph = (name: string, port: number, field: string) =>
  startSubgraph<SubgraphContext>({
    name,
    typeDefs: gql(`extend type Query { ${field}: String }`),
    resolvers: { Query: { [field]: () => field } } as never,
    callerKeys: secrets.callerKeys,
    logger: testLogger,
    host: '127.0.0.1',
    port,
  })

let early: RunningSubgraph
let late: RunningSubgraph | undefined
let gateway: FastifyInstance
let client: GatewayClient
let baseUrl: string
/** where the late subgraph will listen once the test starts it */
let latePort: number

beforeAll(async () => {
  early = await subgraph('early', 0, 'fromEarly')
  latePort = await freePort()
  gateway = await buildGateway({
    services: [
      { name: 'early', url: early.url },
      { name: 'late', url: `http://127.0.0.1:${latePort}/graphql` },
    ],
    secrets,
    graphiql: false,
    logger: testLogger,
  })
  await gateway.listen({ host: '127.0.0.1', port: 0 })
  baseUrl = `http://127.0.0.1:${(gateway.server.address() as { port: number }).port}`
  client = createGatewayClient({ url: `${baseUrl}/graphql`, signer: { issuer: 'xrpc-adapter', key: secrets.callerKeys['xrpc-adapter'] } })
})

afterAll(async () => {
  await client?.close()
  await gateway?.close()
  await late?.stop()
  await early?.stop()
})

const readiness = async () => {
  const res = await fetch(`${baseUrl}/readyz`, { headers: { authorization: `Bearer ${secrets.metricsToken}` } })
  return { status: res.status, body: (await res.json()) as { checks: Record<string, string> } }
}

it('is not ready without a subgraph, and composes it in once it answers', async () => {
  const waiting = await readiness()
  expect(waiting.status).toBe(503)
  expect(waiting.body.checks.schema).toMatch(/waiting for late/)
  // the adapter's check on the gateway (xrpc-adapter/src/main.ts): not ready while the gateway waits, saying for what
  const gatewayReady = upstreamReady(`${baseUrl}/graphql`, secrets.metricsToken)
  await expect(gatewayReady()).rejects.toThrow('answered 503: schema: the schema is not composed yet: waiting for late')
  await expect(client.query('{ fromEarly }', {}, as)).resolves.toEqual({ fromEarly: 'fromEarly' })
  await expect(client.query('{ fromLate }', {}, as)).rejects.toBeDefined()

  // well past the ten seconds the gateway used to retry for
  await new Promise((resolve) => setTimeout(resolve, 11_000))
  expect((await readiness()).status).toBe(503)

  late = await subgraph('late', latePort, 'fromLate')
  let ready = await readiness()
  for (let i = 0; i < 50 && ready.status !== 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200))
    ready = await readiness()
  }
  expect(ready).toEqual({ status: 200, body: { ok: true, checks: { schema: 'ok' } } })
  await expect(gatewayReady()).resolves.toBeUndefined()
  await expect(client.query('{ fromLate }', {}, as)).resolves.toEqual({ fromLate: 'fromLate' })
}, 30_000)
