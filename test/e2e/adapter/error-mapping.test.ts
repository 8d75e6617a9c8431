/**
 * The routing table's error column: a method renames a domain error where its contract calls it
 * differently; every other error passes unchanged.
 */
import { startStack, type TestStack } from '../../stack'
import { methodTable, type GatewayMethod } from '@svc/xrpc-adapter'

let stack: TestStack
const getConfig = methodTable.get('money.svc.app.getConfig') as GatewayMethod

beforeAll(async () => {
  // getConfig's own operation, as a method whose contract says AppUnauthorized for an unknown app
  const mapped: GatewayMethod = { ...getConfig, errors: { AppNotRegistered: 'AppUnauthorized' } }
  stack = await startStack('error_mapping', { methods: new Map([[getConfig.nsid, mapped]]) })
})
afterAll(async () => {
  await stack?.stop()
})

test('a mapped domain error leaves with the name and status of the method contract', async () => {
  const { generateDidKeyKeypair, mintServiceJwt } = await import('@svc/service-auth')
  const stranger = await generateDidKeyKeypair('ES256K')
  const jwt = await mintServiceJwt({ keypair: stranger.keypair, iss: stranger.did, aud: stack.serviceDid, lxm: getConfig.nsid })
  const res = await fetch(`${stack.apiUrl}/xrpc/${getConfig.nsid}?environment=test`, { headers: { authorization: `Bearer ${jwt}` } })
  expect(res.status).toBe(403)
  expect(await res.json()).toEqual({ error: 'AppUnauthorized', message: expect.stringContaining('not registered') })
})

test('an unmapped error passes unchanged', async () => {
  const app = await stack.newApp({ environments: ['test'] })
  const res = await fetch(`${stack.apiUrl}/xrpc/${getConfig.nsid}?environment=live`, {
    headers: { authorization: `Bearer ${await app.jwt(getConfig.nsid)}` },
  })
  expect(res.status).toBe(404)
  expect(((await res.json()) as { error: string }).error).toBe('AppEnvironmentNotConfigured')
})

test('the shipped getConfig maps nothing: an unknown app is AppNotRegistered', () => {
  expect(getConfig.errors).toBeUndefined()
})
