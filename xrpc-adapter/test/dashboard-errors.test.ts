/**
 * The dashboard answers what its routes do not (an unknown page, a body it cannot read, a method it has no route for)
 * with its own pages and the pages' security headers, never the API's bare JSON: a browser is on the other end. An
 * https checkout host adds HSTS to every answer; the sign-in page's command carries nothing of the request's query.
 * On an https checkout host the dashboard's cookies are `__Host-` prefixed, and a cookie without the prefix (which a
 * sibling subdomain can toss in with Domain=.parent) is not read.
 */
import type { FastifyInstance, InjectOptions } from 'fastify'
import type { DashboardSessions } from '@svc/dashboard-session'
import { createGatewayClient } from '@svc/gateway-client'
import { buildCheckoutServer } from '../src'
import { CHECKOUT_HSTS } from '../src/server'
import { bareServerDeps } from './helpers'

const gateway = createGatewayClient({ url: 'http://127.0.0.1:1/graphql', signer: { issuer: 'xrpc-adapter', key: 'unused' } })
let checkout: FastifyInstance

beforeAll(async () => {
  checkout = await buildCheckoutServer(bareServerDeps(gateway))
})
afterAll(async () => {
  await checkout.close()
  await gateway.close()
})

const form = (body: string, contentType: string): InjectOptions => ({ method: 'POST', url: '/dashboard/logout', headers: { 'content-type': contentType }, body })

test('an https checkout host tells browsers to stay on https (HSTS); a plain-http one, in development, does not', async () => {
  const secure = await buildCheckoutServer(bareServerDeps(gateway, { checkoutUrl: 'https://pay.example.com' }))
  try {
    for (const url of ['/checkout/x', '/dashboard/nope', '/health']) {
      expect((await secure.inject({ method: 'GET', url })).headers['strict-transport-security']).toBe(CHECKOUT_HSTS)
    }
  } finally {
    await secure.close()
  }
  expect((await checkout.inject({ method: 'GET', url: '/checkout/x' })).headers['strict-transport-security']).toBeUndefined()
})

test("the sign-in page's command names a page to come back to only when it is a plain dashboard path: never text of the request's that a shell would run", async () => {
  // nobody is signed in
  const signedOut = await buildCheckoutServer(bareServerDeps(gateway, { dashboardSessions: { getSession: async () => null } as unknown as DashboardSessions }))
  const plain = await signedOut.inject({ method: 'GET', url: '/dashboard/events' })
  expect(plain.statusCode).toBe(401)
  expect(plain.body).toContain('--next /dashboard/events</code>')
  for (const url of ['/dashboard/events?x=$(id)', '/dashboard/events?uri=a%60id%60', '/dashboard/events?x=;id']) {
    const res = await signedOut.inject({ method: 'GET', url })
    expect(res.statusCode).toBe(401)
    expect(res.body).toContain('--next /dashboard/events</code>')
    expect(res.body).not.toMatch(/\$\(id\)|`id`|;id/)
  }
  await signedOut.close()
})

test.each<[string, InjectOptions, number]>([
  ['an unknown page', { method: 'GET', url: '/dashboard/nope' }, 404],
  ['logout asked with GET', { method: 'GET', url: '/dashboard/logout' }, 404],
  ['a method the dashboard has no route for', { method: 'PUT', url: '/dashboard' }, 404],
  ['a multipart body', form('--x\r\n\r\n--x--', 'multipart/form-data; boundary=x'), 400],
  ['a JSON body', form('{', 'application/json'), 400],
  ['a form over 16 KiB', form(`csrf=${'a'.repeat(20 * 1024)}`, 'application/x-www-form-urlencoded'), 413],
])('%s: a page with the security headers', async (_what, request, status) => {
  const res = await checkout.inject(request)
  expect(res.statusCode).toBe(status)
  expect(res.headers['content-type']).toMatch(/^text\/html/)
  expect(res.headers['x-frame-options']).toBe('DENY')
  expect(res.headers['cache-control']).toBe('no-store')
  expect(res.headers['svc-request-id']).toMatch(/^req_/)
})

test('signing in goes on when ending the browser\'s earlier session fails (Redis away for a moment): the link is spent by then, so a 503 left the creator with no session and a dead link', async () => {
  const session = { sessionId: 'ses_x', actorDid: 'did:plc:creator', environment: 'test', csrfToken: 'c', expiresAt: Date.now() + 60_000 }
  const sessions = {
    redeemLoginLink: async () => ({ cookie: 'dss_new', session }),
    destroySession: async () => Promise.reject(Object.assign(new Error('Reached the max retries per request limit'), { name: 'MaxRetriesPerRequestError' })),
    getSession: async () => null,
  } as unknown as DashboardSessions
  const server = await buildCheckoutServer(bareServerDeps(gateway, { dashboardSessions: sessions }))
  try {
    const res = await server.inject({
      method: 'POST',
      url: '/dashboard/login/dsl_x',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: 'svc_dashboard_login=n1; svc_dashboard=dss_old' },
      body: 'nonce=n1',
    })
    expect(res.statusCode).toBe(303)
    expect(String(res.headers['set-cookie'])).toContain('svc_dashboard=dss_new')
  } finally {
    await server.close()
  }
})

describe('on an https checkout host the cookies are __Host- prefixed: a sibling subdomain cannot toss in a sign-in nonce or a session', () => {
  const token = `dsl_${'A'.repeat(43)}`
  const session = { sessionId: 'ses_x', actorDid: 'did:plc:creator', environment: 'test', csrfToken: 'c', expiresAt: Date.now() + 60_000 }
  let redeemed: string[]
  let server: FastifyInstance
  beforeEach(async () => {
    redeemed = []
    const sessions = {
      peekLoginLink: async () => ({ actorDid: 'did:plc:creator', environment: 'test' }),
      redeemLoginLink: async (t: string) => {
        redeemed.push(t)
        return { cookie: 'dss_new', session }
      },
      destroySession: async () => {},
      getSession: async () => null,
    } as unknown as DashboardSessions
    server = await buildCheckoutServer(bareServerDeps(gateway, { checkoutUrl: 'https://pay.example.com', dashboardSessions: sessions }))
  })
  afterEach(async () => {
    await server.close()
  })
  const cookies = (res: { headers: Record<string, unknown> }): string[] => [res.headers['set-cookie'] ?? []].flat().map(String)
  const signIn = (cookie: string) =>
    server.inject({ method: 'POST', url: `/dashboard/login/${token}`, headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, body: 'nonce=abc' })

  test('the sign-in page sets the nonce as __Host-svc_dashboard_login: Secure, Path=/, no Domain', async () => {
    const page = await server.inject({ method: 'GET', url: `/dashboard/login/${token}` })
    expect(page.statusCode).toBe(200)
    const [nonce, ...others] = cookies(page)
    expect(others).toEqual([])
    expect(nonce).toMatch(/^__Host-svc_dashboard_login=[A-Za-z0-9_-]+;/)
    const attributes = nonce!.split(/;\s*/).slice(1)
    expect(attributes).toContain('Secure')
    expect(attributes).toContain('Path=/')
    expect(attributes).toContain('HttpOnly')
    expect(attributes).toContain('SameSite=Strict')
    expect(attributes.some((a) => /^domain=/i.test(a))).toBe(false)
  })

  test('a sign-in with only the unprefixed nonce cookie (what a sibling subdomain can set) is refused and spends nothing', async () => {
    const res = await signIn('svc_dashboard_login=abc')
    expect(res.statusCode).toBe(403)
    expect(res.body).toContain('expired or was not opened here')
    expect(redeemed).toEqual([])
    expect(cookies(res).some((c) => c.includes('svc_dashboard='))).toBe(false)
  })

  test('with the prefixed nonce cookie the link is spent, and the session is set as __Host-svc_dashboard with Path=/ (the nonce is cleared the same way)', async () => {
    const res = await signIn('__Host-svc_dashboard_login=abc')
    expect(res.statusCode).toBe(303)
    expect(redeemed).toEqual([token])
    const set = cookies(res)
    const sessionCookie = set.find((c) => c.startsWith('__Host-svc_dashboard='))
    expect(sessionCookie).toMatch(/^__Host-svc_dashboard=dss_new;/)
    expect(sessionCookie!.split(/;\s*/)).toEqual(expect.arrayContaining(['Path=/', 'Secure', 'HttpOnly', 'SameSite=Lax']))
    expect(sessionCookie).not.toMatch(/domain=/i)
    const cleared = set.find((c) => c.startsWith('__Host-svc_dashboard_login='))
    expect(cleared!.split(/;\s*/)).toEqual(expect.arrayContaining(['__Host-svc_dashboard_login=', 'Path=/', 'Secure']))
  })

  test('an unprefixed session cookie opens nothing, and logout clears the prefixed one with Secure and Path=/', async () => {
    const read: unknown[] = []
    const sessions = {
      getSession: async (cookie: string | undefined) => {
        read.push(cookie)
        return cookie === 'dss_good' ? session : null
      },
      destroySession: async () => {},
    } as unknown as DashboardSessions
    const other = await buildCheckoutServer(bareServerDeps(gateway, { checkoutUrl: 'https://pay.example.com', dashboardSessions: sessions }))
    try {
      const tossed = await other.inject({ method: 'POST', url: '/dashboard/logout', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: 'svc_dashboard=dss_good' }, body: 'csrf=c' })
      expect(tossed.statusCode).toBe(401)
      expect(read).toEqual([undefined])
      const out = await other.inject({ method: 'POST', url: '/dashboard/logout', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: '__Host-svc_dashboard=dss_good' }, body: 'csrf=c' })
      expect(out.statusCode).toBe(200)
      const cleared = cookies(out).find((c) => c.startsWith('__Host-svc_dashboard='))
      expect(cleared!.split(/;\s*/)).toEqual(expect.arrayContaining(['__Host-svc_dashboard=', 'Path=/', 'Secure']))
    } finally {
      await other.close()
    }
  })
})
