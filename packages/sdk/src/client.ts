/**
 * The XRPC client: one fresh service-auth JWT per call (iss = app DID, aud = service DID, lxm = NSID, random jti),
 * queries as GET with query parameters, procedures as POST with a JSON body, and errors as SvcError.
 */
import { DEFAULT_MAX_LIFETIME_SECONDS, keypairFromPrivateKeyHex, mintServiceJwt, type MintServiceJwtParams, type ServiceJwtAlg } from '@svc/service-auth'
import { isDid } from '@svc/vocabulary'
import { REQUEST_ID_HEADER, SvcError, parseRetryAfter } from './errors'
import { METHOD_TYPES, type MethodNsid, type Methods } from '@svc/lexicons/types'

export type { Methods, MethodNsid }

/** A keypair that can sign service JWTs (e.g. from generateDidKeyKeypair or keypairFromPrivateKeyHex). */
export type SigningKeypair = MintServiceJwtParams['keypair']

export interface SvcClientOptionsBase {
  /** `{base_url}`: the API host serving `/xrpc/*`, e.g. `https://api.svc.example`. */
  baseUrl: string
  /** The app's DID: the `iss` of every service JWT. Its DID document's `#atproto` key must match the keypair. */
  appDid: string
  /** The service's DID: the `aud` of every service JWT. */
  serviceDid: string
  /** A fetch implementation (default: the global fetch). */
  fetch?: typeof fetch
  /** Lifetime of each service JWT in seconds (default 60; the service refuses more than 300). */
  jwtExpiresInSeconds?: number
  /** Per-request timeout in ms (default 30 000); elapsing gives SvcError status 0, error `Timeout` (transient). */
  requestTimeoutMs?: number
}

export type SvcClientOptions = SvcClientOptionsBase &
  (
    | { keypair: SigningKeypair; privateKeyHex?: undefined; alg?: undefined }
    | { keypair?: undefined; privateKeyHex: string; alg: ServiceJwtAlg }
  )

export interface CallOptions {
  /** Aborts the request; the abort reason is thrown as is. */
  signal?: AbortSignal
  /** Overrides the client's per-request timeout. */
  timeoutMs?: number
}

/** What `call` takes for a method: its query parameters for a query, its input body for a procedure. */
export type CallArg<N extends MethodNsid> = Methods[N]['type'] extends 'query' ? Methods[N]['params'] : Methods[N]['input']

type Out<N extends MethodNsid> = Promise<Methods[N]['output']>

export interface SvcClient {
  readonly appDid: string
  readonly serviceDid: string
  readonly baseUrl: string
  /** Any active method by NSID: query parameters for a query, the JSON body for a procedure. */
  call<N extends MethodNsid>(nsid: N, arg: CallArg<N>, options?: CallOptions): Out<N>
  /** money.svc.app.getConfig */
  getConfig(params: Methods['money.svc.app.getConfig']['params'], options?: CallOptions): Out<'money.svc.app.getConfig'>
  /** money.svc.app.updateConfig: last write wins; safe to retry with the same desired configuration. */
  updateConfig(input: Methods['money.svc.app.updateConfig']['input'], options?: CallOptions): Out<'money.svc.app.updateConfig'>
  /** money.svc.actor.getPayoutStatus */
  getPayoutStatus(params: Methods['money.svc.actor.getPayoutStatus']['params'], options?: CallOptions): Out<'money.svc.actor.getPayoutStatus'>
  /** money.svc.actor.getProfile */
  getProfile(params: Methods['money.svc.actor.getProfile']['params'], options?: CallOptions): Out<'money.svc.actor.getProfile'>
  /** network.svc.payment.initiate, one attempt (see initiateCheckout for the retry rule). */
  initiatePayment(input: Methods['network.svc.payment.initiate']['input'], options?: CallOptions): Out<'network.svc.payment.initiate'>
  /** network.svc.payment.status, one read (see pollPaymentStatus). */
  getPaymentStatus(params: Methods['network.svc.payment.status']['params'], options?: CallOptions): Out<'network.svc.payment.status'>
  /**
   * money.svc.app.requestRecipientApproval: creates or updates this app's approval request to a creator (idempotent by
   * app, recipient and environment; safe to retry). Send the creator to `onboardingUrl` (or `dashboardUrl`).
   */
  requestRecipientApproval(
    input: Methods['money.svc.app.requestRecipientApproval']['input'],
    options?: CallOptions,
  ): Out<'money.svc.app.requestRecipientApproval'>
  /** money.svc.app.getRecipientApproval: read-only; the connection is ready only per isConnectionReady. */
  getRecipientApproval(
    params: Methods['money.svc.app.getRecipientApproval']['params'],
    options?: CallOptions,
  ): Out<'money.svc.app.getRecipientApproval'>
  /** money.svc.payment.registerCreatorProof: registers the creator's proof record of a payment (when delegated). */
  registerCreatorProof(
    input: Methods['money.svc.payment.registerCreatorProof']['input'],
    options?: CallOptions,
  ): Out<'money.svc.payment.registerCreatorProof'>
  /** money.svc.payment.declineRecord: closes the pending creator-proof slot of a payment as declined. */
  declineRecord(input: Methods['money.svc.payment.declineRecord']['input'], options?: CallOptions): Out<'money.svc.payment.declineRecord'>
  /**
   * tickets.svc.configureTicketTiers: creates or updates an event's tiers. `organizerAssertionJwt` is minted by the
   * organizer (mintAssertion with the organizer's key, `lxm` = this NSID); the organizer must own the event's AT-URI.
   */
  configureTicketTiers(input: Methods['tickets.svc.configureTicketTiers']['input'], options?: CallOptions): Out<'tickets.svc.configureTicketTiers'>
  /** tickets.svc.getTicketAvailability: each tier's tickets available now; safe to poll. */
  getTicketAvailability(params: Methods['tickets.svc.getTicketAvailability']['params'], options?: CallOptions): Out<'tickets.svc.getTicketAvailability'>
  /**
   * tickets.svc.claimFreeTicket: idempotent by `idempotencyKey` (with app, event, tier and buyer; without a key, by
   * those alone: one claim per buyer and tier): a retry, even with
   * the same buyer assertion, returns the same ticket, with the same `url` (the buyer's page with its QR code).
   */
  claimFreeTicket(input: Methods['tickets.svc.claimFreeTicket']['input'], options?: CallOptions): Out<'tickets.svc.claimFreeTicket'>
  /**
   * tickets.svc.createTicketHold: holds paid tickets and answers the hosted checkout URL to send the buyer to;
   * idempotent by `appOrderId` (with the buyer and the items): after no answer, call it again to get the hold.
   */
  createTicketHold(input: Methods['tickets.svc.createTicketHold']['input'], options?: CallOptions): Out<'tickets.svc.createTicketHold'>
  /** money.svc.catalog.registerAppLink: the app's private fulfillment URL for a catalog record (last write wins). */
  registerAppLink(input: Methods['money.svc.catalog.registerAppLink']['input'], options?: CallOptions): Out<'money.svc.catalog.registerAppLink'>
}


/** The service refuses a service JWT that lives longer (docs/decisions.md). */
const MAX_JWT_LIFETIME_SECONDS = DEFAULT_MAX_LIFETIME_SECONDS
/** The longest delay a timer takes (a longer one fires at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1
/** A private key is a scalar from 1 to the curve's order - 1. */
const CURVE_ORDER = {
  ES256K: 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n,
  ES256: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n,
} as const

/** A token lifetime the service takes: a whole number of seconds up to its limit (undefined: the default, 60). */
export function assertJwtLifetime(name: string, lifetime: number | undefined): void {
  if (lifetime !== undefined && !(Number.isInteger(lifetime) && lifetime >= 1 && lifetime <= MAX_JWT_LIFETIME_SECONDS)) {
    throw new RangeError(`${name} must be a whole number from 1 to ${MAX_JWT_LIFETIME_SECONDS} (the service refuses longer)`)
  }
}

function assertOptions(options: SvcClientOptions): URL {
  let base: URL
  try {
    base = new URL(options.baseUrl)
  } catch {
    throw new TypeError(`baseUrl must be an absolute URL: ${String(options.baseUrl)}`)
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new TypeError('baseUrl must be an http(s) URL')
  // credentials in a URL make fetch throw (a NetworkError retried without end, the URL in its message); a query or a
  // fragment would silently drop the base's path from every call's URL
  if (base.username !== '' || base.password !== '') throw new TypeError('baseUrl must not carry a user name or password')
  if (base.search !== '' || base.hash !== '') throw new TypeError('baseUrl must not have a query or a fragment')
  if (!isDid(options.appDid)) throw new TypeError('appDid must be a DID')
  if (!isDid(options.serviceDid)) throw new TypeError('serviceDid must be a DID')
  const hasKeypair = options.keypair !== undefined
  const hasHex = options.privateKeyHex !== undefined
  if (hasKeypair === hasHex) throw new TypeError('give exactly one of keypair or privateKeyHex (with alg)')
  if (hasHex && options.alg !== 'ES256K' && options.alg !== 'ES256') throw new TypeError('privateKeyHex needs alg ES256K or ES256')
  if (hasHex && !/^(0x)?[0-9a-fA-F]{64}$/.test(options.privateKeyHex!.trim())) throw new TypeError('privateKeyHex must be 32 bytes of hex')
  if (hasHex) {
    const scalar = BigInt(`0x${options.privateKeyHex!.trim().replace(/^0x/, '')}`)
    if (scalar === 0n || scalar >= CURVE_ORDER[options.alg!]) throw new TypeError(`privateKeyHex is not a valid ${options.alg} private key (out of range)`)
  }
  assertJwtLifetime('jwtExpiresInSeconds', options.jwtExpiresInSeconds)
  const timeout = options.requestTimeoutMs
  if (timeout !== undefined && !(timeout >= 1 && timeout <= MAX_TIMER_MS)) throw new RangeError(`requestTimeoutMs must be from 1 to ${MAX_TIMER_MS} ms`)
  return base
}

function appendParams(url: URL, params: unknown): void {
  if (params === undefined || params === null) return
  for (const [key, value] of Object.entries(params as Record<string, unknown>)) {
    if (value === undefined || value === null) continue
    for (const one of Array.isArray(value) ? value : [value]) {
      if (one === undefined || one === null) continue
      url.searchParams.append(key, typeof one === 'string' ? one : String(one))
    }
  }
}

/** Creates a client for one app. Synchronous; a private key given as hex is imported on the first call. */
export function createSvcClient(options: SvcClientOptions): SvcClient {
  const base = assertOptions(options)
  const fetchImpl = options.fetch ?? globalThis.fetch
  const expiresInSeconds = options.jwtExpiresInSeconds ?? 60
  const defaultTimeoutMs = options.requestTimeoutMs ?? 30_000
  let keypair: Promise<SigningKeypair> | undefined =
    options.keypair !== undefined ? Promise.resolve(options.keypair) : undefined
  const getKeypair = (): Promise<SigningKeypair> => {
    keypair ??= keypairFromPrivateKeyHex(options.privateKeyHex!, options.alg!)
    return keypair
  }

  async function call<N extends MethodNsid>(nsid: N, arg: CallArg<N>, callOptions: CallOptions = {}): Out<N> {
    const kind = (Object.hasOwn(METHOD_TYPES, nsid) ? METHOD_TYPES[nsid] : undefined) as 'query' | 'procedure' | undefined
    if (kind === undefined) throw new TypeError(`unknown or retired method: ${String(nsid)}`)
    const url = new URL(`xrpc/${nsid}`, base.href.endsWith('/') ? base : `${base.href}/`)
    const jwt = await mintServiceJwt({ keypair: await getKeypair(), iss: options.appDid, aud: options.serviceDid, lxm: nsid, expiresInSeconds })
    const headers: Record<string, string> = { authorization: `Bearer ${jwt}`, accept: 'application/json' }
    // never followed: a redirect would resend the call (its single-use JWT too) elsewhere, a POST as a GET
    const init: RequestInit = { method: kind === 'query' ? 'GET' : 'POST', headers, redirect: 'manual' }
    if (kind === 'query') appendParams(url, arg)
    else if (arg !== undefined) {
      headers['content-type'] = 'application/json'
      init.body = JSON.stringify(arg)
    }

    return (await exchange(fetchImpl, url, init, { label: nsid, timeoutMs: callOptions.timeoutMs ?? defaultTimeoutMs, signal: callOptions.signal, urlOption: 'baseUrl' })) as unknown as Methods[N]['output']
  }

  return {
    appDid: options.appDid,
    serviceDid: options.serviceDid,
    baseUrl: base.href,
    call,
    getConfig: (params, o) => call('money.svc.app.getConfig', params, o),
    updateConfig: (input, o) => call('money.svc.app.updateConfig', input, o),
    getPayoutStatus: (params, o) => call('money.svc.actor.getPayoutStatus', params, o),
    getProfile: (params, o) => call('money.svc.actor.getProfile', params, o),
    initiatePayment: (input, o) => call('network.svc.payment.initiate', input, o),
    getPaymentStatus: (params, o) => call('network.svc.payment.status', params, o),
    requestRecipientApproval: (input, o) => call('money.svc.app.requestRecipientApproval', input, o),
    getRecipientApproval: (params, o) => call('money.svc.app.getRecipientApproval', params, o),
    registerCreatorProof: (input, o) => call('money.svc.payment.registerCreatorProof', input, o),
    declineRecord: (input, o) => call('money.svc.payment.declineRecord', input, o),
    registerAppLink: (input, o) => call('money.svc.catalog.registerAppLink', input, o),
    configureTicketTiers: (input, o) => call('tickets.svc.configureTicketTiers', input, o),
    getTicketAvailability: (params, o) => call('tickets.svc.getTicketAvailability', params, o),
    claimFreeTicket: (input, o) => call('tickets.svc.claimFreeTicket', input, o),
    createTicketHold: (input, o) => call('tickets.svc.createTicketHold', input, o),
  }
}

/**
 * One request and its JSON object answer, as every client of the SDK makes it: a timeout (SvcError `Timeout`), no
 * answer (`NetworkError`), a redirect (never followed: it would resend the call's credential elsewhere), an error
 * status (its contract error, `Retry-After` and request id), and an answer that is not a JSON object (`InvalidResponse`).
 * `label` names the call in messages and as the error's `nsid` (the NSID, or the route's method and path); a redirect
 * names `urlOption`, the client's option that gave the URL.
 */
export async function exchange(fetchImpl: typeof fetch, url: URL, init: RequestInit, call: { label: string; timeoutMs: number; signal?: AbortSignal; urlOption: string }): Promise<Record<string, unknown>> {
  const { label: nsid, timeoutMs } = call
  if (!(timeoutMs >= 1 && timeoutMs <= MAX_TIMER_MS)) throw new RangeError(`timeoutMs must be from 1 to ${MAX_TIMER_MS} ms`)
  const timeout = AbortSignal.timeout(timeoutMs)
  init.signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout

  let res: Response
  let text: string
  try {
    res = await fetchImpl(url, init)
    text = await res.text()
  } catch (err) {
    if (call.signal?.aborted) throw call.signal.reason
    if (timeout.aborted) {
      throw new SvcError({ status: 0, error: 'Timeout', message: `${nsid}: no response within ${timeoutMs} ms`, nsid, cause: err })
    }
    throw new SvcError({ status: 0, error: 'NetworkError', message: `${nsid}: ${(err as Error)?.message ?? 'request failed'}`, nsid, cause: err })
  }

  const requestId = res.headers.get(REQUEST_ID_HEADER)
  let body: unknown = undefined
  let parsed = true
  if (text !== '') {
    try {
      body = JSON.parse(text)
    } catch {
      parsed = false
    }
  }
  if (res.status >= 300 && res.status < 400) {
    const location = res.headers.get('location')
    throw new SvcError({ status: res.status, error: 'HttpError', message: `${nsid}: redirected (HTTP ${res.status}${location ? ` to ${location}` : ''}); the service does not redirect: check ${call.urlOption}`, requestId, nsid })
  }
  if (!res.ok) {
    const b = (parsed && typeof body === 'object' && body !== null ? body : {}) as { error?: unknown; message?: unknown }
    const code = typeof b.error === 'string' && b.error !== '' ? b.error : 'HttpError'
    const message = typeof b.message === 'string' ? b.message : `${nsid}: HTTP ${res.status}`
    throw new SvcError({ status: res.status, error: code, message, requestId, nsid, retryAfterMs: parseRetryAfter(res.headers.get('retry-after')) })
  }
  // every method answers a JSON object: an empty body (a proxy's 200 or 204) is not an answer either. Status 0, as
  // for no response: nothing readable arrived, so the call may be repeated (a poll keeps polling)
  if (!parsed || typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new SvcError({ status: 0, error: 'InvalidResponse', message: `${nsid}: the response (HTTP ${res.status}) is not a JSON object`, requestId, nsid })
  }
  return body as Record<string, unknown>
}
