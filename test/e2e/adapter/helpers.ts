/**
 * Shared helpers of the XRPC edge integration tests: real HTTP (global fetch) against `startStack()`.
 * Not a test file itself (jest only runs `*.test.ts`).
 */
import { randomBytes } from 'node:crypto'
import { registerApp } from '@svc/apps'
import { generateDidKeyKeypair, type DidKeyKeypair, type ServiceJwtAlg } from '@svc/service-auth'
import { answersError } from '@svc/xrpc-adapter'
import type { TestStack } from '../../stack'

export const GET_CONFIG = 'money.svc.app.getConfig'
export const UPDATE_CONFIG = 'money.svc.app.updateConfig'
export const REQUEST_ID_HEADER = 'svc-request-id'

/** The registration `stack.newApp` makes (kept in step with packages/testing/src/stack.ts). */
export const DEFAULT_REGISTRATION = {
  appUrl: 'https://app.example.com',
  feeShareBps: 500,
  ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd' },
} as const

export interface HttpResult {
  status: number
  body: any
  text: string
  requestId: string | null
  headers: Headers
}

async function toResult(res: Response): Promise<HttpResult> {
  const text = await res.text()
  let body: unknown = undefined
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {
    body = undefined
  }
  return { status: res.status, body, text, requestId: res.headers.get(REQUEST_ID_HEADER), headers: res.headers }
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` }
}

export async function httpRequest(url: string, init: RequestInit = {}): Promise<HttpResult> {
  return toResult(await fetch(url, init))
}

/** GET {apiUrl}/xrpc/{nsid}?params */
export async function xrpcGet(
  stack: TestStack,
  nsid: string,
  params: Record<string, string | string[]> = {},
  headers: Record<string, string> = {},
  method: 'GET' | 'POST' = 'GET',
): Promise<HttpResult> {
  const url = new URL(`/xrpc/${nsid}`, stack.apiUrl)
  for (const [k, v] of Object.entries(params)) for (const one of Array.isArray(v) ? v : [v]) url.searchParams.append(k, one)
  return declared(nsid, await httpRequest(url.toString(), { method, headers }))
}

/** POST {apiUrl}/xrpc/{nsid} with a JSON body (or a raw body with its own content type). */
export async function xrpcPost(
  stack: TestStack,
  nsid: string,
  body: unknown,
  headers: Record<string, string> = {},
  raw?: { body: string; contentType?: string },
): Promise<HttpResult> {
  const init: RequestInit = { method: 'POST', headers: { ...headers } }
  if (raw) {
    init.body = raw.body
    if (raw.contentType) (init.headers as Record<string, string>)['content-type'] = raw.contentType
  } else if (body !== undefined) {
    init.body = JSON.stringify(body)
    ;(init.headers as Record<string, string>)['content-type'] = 'application/json'
  }
  return declared(nsid, await httpRequest(`${stack.apiUrl}/xrpc/${nsid}`, init))
}

/** Every error a method answers is one its lexicon declares, or one any method may answer (methods/method-errors.ts). */
function declared(nsid: string, res: HttpResult): HttpResult {
  const code: unknown = res.body?.error
  if (res.status >= 400 && typeof code === 'string' && !answersError(nsid, code)) {
    throw new Error(`${nsid} answered ${code}, which its lexicon does not declare`)
  }
  return res
}

/** Asserts the exact status, the exact `error` code, an `{error, message}` body and a Svc-Request-Id. */
export function expectError(res: HttpResult, status: number, code: string, messageMatch?: RegExp): void {
  expect({ status: res.status, error: res.body?.error }).toEqual({ status, error: code })
  expect(Object.keys(res.body).sort()).toEqual(['error', 'message'])
  expect(typeof res.body.message).toBe('string')
  if (messageMatch) expect(res.body.message).toMatch(messageMatch)
  expect(res.requestId).toMatch(/^req_[0-9a-f]{32}$/)
}

/** Asserts a 200 with a Svc-Request-Id and returns the body. */
export function expectOk(res: HttpResult): any {
  expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: expect.anything() })
  expect(res.requestId).toMatch(/^req_[0-9a-f]{32}$/)
  return res.body
}

/** Reads the app's configuration with a fresh JWT. */
export async function getConfig(stack: TestStack, app: { jwt(lxm: string): Promise<string> }, environment: 'test' | 'live') {
  return xrpcGet(stack, GET_CONFIG, { environment }, bearer(await app.jwt(GET_CONFIG)))
}

/** Updates the app's configuration with a fresh JWT. */
export async function updateConfig(stack: TestStack, app: { jwt(lxm: string): Promise<string> }, body: Record<string, unknown>) {
  return xrpcPost(stack, UPDATE_CONFIG, body, bearer(await app.jwt(UPDATE_CONFIG)))
}

/** The getConfig body of a freshly registered app (stack.newApp defaults). */
export function freshConfig(appDid: string, environment: 'test' | 'live') {
  return {
    appDid,
    environment,
    appUrl: DEFAULT_REGISTRATION.appUrl,
    feeShareBps: DEFAULT_REGISTRATION.feeShareBps,
    webhook: { configured: false, paused: false, channel: 'webhook' },
    appConfig: {
      modules: { tickets: false },
      ticketing: { qrPasses: false, walletPasses: false },
      ticketFee: { ...DEFAULT_REGISTRATION.ticketFee, passToBuyer: false },
    },
  }
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
export const nowSeconds = () => Math.floor(Date.now() / 1000)

/** Builds and signs a JWT by hand (as createServiceJwt does), with any header and claims. */
export async function craftJwt(
  keypair: DidKeyKeypair['keypair'],
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
): Promise<string> {
  const toSign = `${b64url(header)}.${b64url(payload)}`
  const sig = await keypair.sign(new TextEncoder().encode(toSign))
  return `${toSign}.${Buffer.from(sig).toString('base64url')}`
}

export function claims(stack: TestStack, iss: string, lxm: string, overrides: Record<string, unknown> = {}) {
  const iat = nowSeconds()
  return { iss, aud: stack.serviceDid, lxm, iat, exp: iat + 60, jti: randomBytes(16).toString('hex'), ...overrides }
}

/** A did:key app registered like stack.newApp, whose keypair the test holds (to craft tokens). */
export async function registerKeypairApp(
  stack: TestStack,
  opts: { environments?: ('test' | 'live')[]; alg?: ServiceJwtAlg } = {},
): Promise<DidKeyKeypair & { alg: ServiceJwtAlg }> {
  const alg = opts.alg ?? 'ES256K'
  const kp = await generateDidKeyKeypair(alg)
  for (const environment of opts.environments ?? ['test']) {
    await registerApp({ models: stack.models }, { did: kp.did, environment, ...DEFAULT_REGISTRATION, ticketFee: { ...DEFAULT_REGISTRATION.ticketFee } })
  }
  return { ...kp, alg }
}

export interface RequestLogEntry {
  requestId: string
  status: number
  errorCode: string | null
  path: string
  keyPrefix: string | null
  environment: string | null
  appDid: string | null
  method: string
}

/** The request log through the gateway, as an operator. */
export async function readRequestLog(
  stack: TestStack,
  filter: { environment?: 'test' | 'live' | null; appDid?: string | null },
): Promise<RequestLogEntry[]> {
  const res = await fetch(stack.gatewayUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(stack.secrets.operatorToken) },
    body: JSON.stringify({
      query: `query Log($environment: String, $appDid: String) {
        requestLog(environment: $environment, appDid: $appDid, limit: 200) {
          requestId status errorCode path keyPrefix environment appDid method
        }
      }`,
      variables: { environment: filter.environment ?? null, appDid: filter.appDid ?? null },
    }),
  })
  const json = (await res.json()) as { data?: { requestLog: RequestLogEntry[] }; errors?: unknown[] }
  expect({ status: res.status, errors: json.errors }).toEqual({ status: 200, errors: undefined })
  return json.data!.requestLog
}
