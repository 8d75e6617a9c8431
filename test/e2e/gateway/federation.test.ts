/**
 * The cross-subgraph entity test behind the graphql pin (root package.json "overrides": graphql 16.11.0).
 * The real apps subgraph and a second subgraph written here are composed by the real gateway; queries
 * resolve the App entity across subgraphs in both directions.
 */
import { randomBytes } from 'node:crypto'
import gql from 'graphql-tag'
import pino from 'pino'
import mongoose from 'mongoose'
import type { FastifyInstance } from 'fastify'
import { startActorsService } from '@svc/actors'
import { connectApps, registerApp, startAppsService, type AppsModels } from '@svc/apps'
import { startSubgraph, type RunningSubgraph, type SubgraphContext } from '@svc/subgraph-server'
import { isolate, reservePort, testCallerKeys } from '@svc/testing'
import { buildGateway } from '@svc/gateway'

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })
const secrets = { callerKeys: testCallerKeys(), operatorToken: randomBytes(32).toString('hex'), metricsToken: randomBytes(32).toString('hex') }

/** A second domain subgraph: it extends App (owned by apps) and hands out App references of its own. */
const featuredTypeDefs = gql`
  extend type App @key(fields: "did") {
    did: ID! @external
    appLabel: String
  }

  type Featured {
    app: App
  }

  extend type Query {
    featuredApp: Featured
  }
`

const APP_DID = 'did:web:featured.example.com'
/** principals that reached the featured subgraph's entity resolver (proves the gateway called it) */
const referenceCalls: { did: string; principal: string }[] = []

const featuredResolvers = {
  Query: {
    featuredApp: () => ({ app: { __typename: 'App', did: APP_DID } }),
  },
  App: {
    __resolveReference: (ref: { did: string }, ctx: SubgraphContext) => {
      referenceCalls.push({ did: ref.did, principal: ctx.principal.kind })
      return { did: ref.did }
    },
    appLabel: (app: { did: string }) => `label:${app.did}`,
  },
}

let apps: RunningSubgraph & { models: AppsModels }
let featured: RunningSubgraph
let gateway: FastifyInstance
let gatewayUrl: string
let conn: mongoose.Connection
let actors: RunningSubgraph | undefined
let models: AppsModels

async function asOperator(query: string): Promise<{ status: number; body: { data?: unknown; errors?: { message: string; extensions?: Record<string, unknown> }[] } }> {
  const res = await fetch(gatewayUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secrets.operatorToken}` },
    body: JSON.stringify({ query }),
  })
  return { status: res.status, body: (await res.json()) as never }
}

beforeAll(async () => {
  const iso = isolate('gateway_federation')
  // held until the gateway listens, so no subgraph started meanwhile on port 0 is given it
  const gatewayHost = await reservePort()
  const gatewayPort = gatewayHost.port
  apps = await startAppsService({
    mongoUrl: iso.mongoUrl,
    callerKeys: secrets.callerKeys,
    gatewayUrl: `http://127.0.0.1:${gatewayPort}/graphql`,
    host: '127.0.0.1',
    port: 0,
    logger,
    allowLoopbackWebhooksInTest: false,
    dashboardUrl: 'http://127.0.0.1:1/dashboard',
  })
  // the apps schema references the actors' ActorProfile entity, so the actors subgraph is composed too
  actors = await startActorsService({ mongoUrl: iso.mongoUrl, callerKeys: secrets.callerKeys, host: '127.0.0.1', port: 0, logger })
  featured = await startSubgraph<SubgraphContext>({
    name: 'featured',
    typeDefs: featuredTypeDefs,
    resolvers: featuredResolvers as never,
    callerKeys: secrets.callerKeys,
    logger,
    host: '127.0.0.1',
    port: 0,
  })
  gateway = await buildGateway({
    services: [
      { name: 'apps', url: apps.url },
      { name: 'actors', url: actors.url },
      { name: 'featured', url: featured.url },
    ],
    secrets,
    graphiql: false,
    logger,
    retryServicesCount: 1,
  })
  await gatewayHost.release()
  await gateway.listen({ host: '127.0.0.1', port: gatewayPort })
  gatewayUrl = `http://127.0.0.1:${(gateway.server.address() as { port: number }).port}/graphql`
  ;({ conn, models } = await connectApps(iso.mongoUrl))
})

afterAll(async () => {
  await gateway?.close()
  await featured?.stop()
  await actors?.stop()
  await apps?.stop()
  await conn?.dropDatabase().catch(() => undefined)
  await conn?.close()
})

test('graphql is the pinned version (16.11.0) everywhere the gateway and subgraphs load it', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  expect(require('graphql/package.json').version).toBe('16.11.0')
  // the copy each federation package resolves is the same pinned one
  for (const from of ['@mercuriusjs/gateway', 'mercurius', '@apollo/subgraph', '@apollo/server']) {
    const path = require.resolve('graphql/package.json', { paths: [require.resolve(from)] })
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    expect({ from, version: require(path).version }).toEqual({ from, version: '16.11.0' })
  }
})

describe('App entity across the apps and featured subgraphs', () => {
  let createdAt: string

  beforeAll(async () => {
    await registerApp({ models }, { did: APP_DID, environment: 'test', appUrl: 'https://featured.example.com', feeShareBps: 100, name: 'Featured' })
    const doc = await models.App.findOne({ did: APP_DID }).lean()
    if (!doc?.createdAt) throw new Error('registered app has no createdAt')
    createdAt = new Date(doc.createdAt).toISOString()
  })

  test('a reference from the featured subgraph is resolved by the apps subgraph', async () => {
    referenceCalls.length = 0
    const res = await asOperator('{ featuredApp { app { did createdAt appLabel } } }')
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      data: { featuredApp: { app: { did: APP_DID, createdAt, appLabel: `label:${APP_DID}` } } },
    })
  })

  test('an App from the apps subgraph is extended by the featured subgraph', async () => {
    referenceCalls.length = 0
    const res = await asOperator(`{ app(did: "${APP_DID}") { did name createdAt appLabel } }`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      data: { app: { did: APP_DID, name: 'Featured', createdAt, appLabel: `label:${APP_DID}` } },
    })
    // the appLabel came through the featured subgraph's _entities, with the caller's signed context
    expect(referenceCalls).toEqual([{ did: APP_DID, principal: 'operator' }])
  })

  test('both directions in one operation', async () => {
    const res = await asOperator(`{ featuredApp { app { did name appLabel } } app(did: "${APP_DID}") { did appLabel } }`)
    expect(res.body).toEqual({
      data: {
        featuredApp: { app: { did: APP_DID, name: 'Featured', appLabel: `label:${APP_DID}` } },
        app: { did: APP_DID, appLabel: `label:${APP_DID}` },
      },
    })
  })

  test('an unknown DID resolves to null across the boundary', async () => {
    const res = await asOperator('{ app(did: "did:web:nobody.example.com") { did appLabel } }')
    expect(res.body).toEqual({ data: { app: null } })
  })
})
