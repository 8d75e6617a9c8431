/**
 * Paths the router cannot read (a malformed percent-escape, a segment over 512 characters) get the host's own answer
 * for an unknown path, with the request id, never Fastify's bare JSON (outside the contract, no request id, no page
 * headers on the checkout host) and never the path repeated (it may carry a token).
 */
import type { FastifyInstance } from 'fastify'
import { createGatewayClient } from '@svc/gateway-client'
import { buildApiServer, buildCheckoutServer } from '../src'
import { bareServerDeps } from './helpers'

const gateway = createGatewayClient({ url: 'http://127.0.0.1:1/graphql', signer: { issuer: 'xrpc-adapter', key: 'unused' } })
let api: FastifyInstance
let checkout: FastifyInstance

beforeAll(async () => {
  api = await buildApiServer(bareServerDeps(gateway))
  checkout = await buildCheckoutServer(bareServerDeps(gateway))
})
afterAll(async () => {
  await Promise.all([api.close(), checkout.close()])
  await gateway.close()
})

const long = 'a'.repeat(600)

test.each(['/xrpc/%ff', `/xrpc/${long}`])('api host %#: 400 InvalidRequest with the request id', async (url) => {
  const res = await api.inject({ method: 'GET', url })
  expect(res.statusCode).toBe(400)
  expect(res.json()).toEqual({ error: 'InvalidRequest', message: 'the request path is malformed or too long' })
  expect(res.headers['svc-request-id']).toMatch(/^req_/)
})

test('api host: an NSID-long segment is still read by the XRPC route (an unknown method: 501)', async () => {
  const res = await api.inject({ method: 'GET', url: `/xrpc/com.example.${'a'.repeat(300)}` })
  expect(res.statusCode).toBe(501)
  expect(res.json().error).toBe('MethodNotImplemented')
})

test.each([`/checkout/%ff`, `/checkout/${long}/pay`])('checkout host %#: the invalid-link page with the page headers', async (url) => {
  const res = await checkout.inject({ method: 'GET', url })
  expect(res.statusCode).toBe(404)
  expect(res.headers['content-type']).toMatch(/^text\/html/)
  expect(res.headers['referrer-policy']).toBe('no-referrer')
  expect(res.headers['svc-request-id']).toMatch(/^req_/)
  expect(res.body).toContain('This checkout link is not valid')
  expect(res.body).not.toContain('%ff')
  expect(res.body).not.toContain(long)
})

test.each([`/dashboard/login/%ff`, `/dashboard/approvals/${long}`])('checkout host %#: the dashboard\'s not-found page', async (url) => {
  const res = await checkout.inject({ method: 'GET', url })
  expect(res.statusCode).toBe(404)
  expect(res.headers['content-type']).toMatch(/^text\/html/)
  expect(res.headers['svc-request-id']).toMatch(/^req_/)
  expect(res.body).toContain('there is no such page')
})
