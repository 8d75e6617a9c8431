/**
 * Outgoing connections to hosts a caller named (a webhook, an XRPC receiver, a did:web document): every new
 * connection checks the address it is about to connect to, after resolution, so a name that resolves inside (DNS
 * rebinding, a private address, the metadata service) is refused before a byte is sent.
 *
 * The names are the callers' too, so they are resolved by DNS queries on the event loop (c-ares, each bounded by
 * RESOLVE_TIMEOUT_MS and RESOLVE_TRIES), not by the system's getaddrinfo (`dns.lookup`): that runs on libuv's four
 * threads and cannot be cancelled, so a name whose servers never answer held a thread for the system resolver's whole
 * timeout (10 s and more), long after the connection gave up; a few such names, which any app may configure, stalled
 * every other lookup of the process, and its file and crypto work. `localhost` and its subdomains are loopback
 * without a query (RFC 6761); /etc/hosts is not read.
 */
import type { LookupAddress, LookupOptions } from 'node:dns'
import { Resolver } from 'node:dns/promises'
import { isIP } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import { Agent, buildConnector } from 'undici'

/** The connect check refused the address. */
export class AddressRefusedError extends Error {
  override readonly name = 'AddressRefusedError'
  readonly code = 'SVC_ADDRESS_REFUSED'
}

export interface AddressGuard {
  /** whether a connection to this address may be opened */
  allowed(ip: string): boolean
  /** the error for a host whose addresses are all refused (`address`: the first of them, or the literal) */
  refusal(host: string, address: string): AddressRefusedError
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/** each DNS query's first wait for an answer (c-ares doubles it for each further try) */
export const RESOLVE_TIMEOUT_MS = 1000
/** tries per name server */
export const RESOLVE_TRIES = 2

/** Where names are resolved: `servers` (`host:port`) instead of the system's (/etc/resolv.conf), for tests. */
export interface ResolveOptions {
  servers?: string[]
}

const LOCALHOST: LookupAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
]

/** no server answered, or none would: the name may resolve later */
const NO_ANSWER = new Set(['ETIMEOUT', 'ESERVFAIL', 'ECONNREFUSED', 'EREFUSED'])

/**
 * No address for the name, with the codes getaddrinfo gives, which the callers read as "nothing was sent": EAI_AGAIN
 * when no server answered, else ENOTFOUND (DNS has no address, or the name cannot be asked: EBADNAME for a label of
 * 64 characters or `a..b`); c-ares' own codes are in the message.
 */
function unresolved(hostname: string, errors: unknown[]): NodeJS.ErrnoException {
  const codes = errors.map((e) => String((e as { code?: unknown }).code ?? 'ENODATA'))
  const code = codes.some((c) => NO_ANSWER.has(c)) ? 'EAI_AGAIN' : 'ENOTFOUND'
  return Object.assign(new Error(`could not resolve ${hostname} (${codes.join(', ')})`), { code, hostname })
}

/**
 * Once one family has answered with addresses, how long the other query may still take (RFC 8305 §3, "Resolution
 * Delay"): a server that drops AAAA queries does not hold a connection for that query's whole timeout.
 */
export const RESOLUTION_DELAY_MS = 50

interface Query {
  settled: Promise<void>
  addresses?: LookupAddress[]
  error?: unknown
}

function query(answer: Promise<string[]>, family: 4 | 6): Query {
  const q: Query = { settled: Promise.resolve() }
  q.settled = answer.then(
    (list) => void (q.addresses = list.map((address) => ({ address, family }))),
    (err: unknown) => void (q.error = err),
  )
  return q
}

/** The name's addresses (IPv4 first), by DNS queries for A and AAAA records in parallel. */
export function createNameResolver(opts: ResolveOptions = {}): (hostname: string) => Promise<LookupAddress[]> {
  const resolver = new Resolver({ timeout: RESOLVE_TIMEOUT_MS, tries: RESOLVE_TRIES })
  if (opts.servers) resolver.setServers(opts.servers)
  return async (hostname) => {
    const name = hostname.toLowerCase().replace(/\.$/, '')
    if (name === 'localhost' || name.endsWith('.localhost')) return LOCALHOST
    const queries = [query(resolver.resolve4(name), 4), query(resolver.resolve6(name), 6)]
    const both = Promise.all(queries.map((q) => q.settled))
    // the first family with addresses, or both settled without
    await Promise.race(queries.map((q) => q.settled.then(() => (q.addresses?.length ? undefined : both))))
    await Promise.race([both, delay(RESOLUTION_DELAY_MS, undefined, { ref: false })])
    const addresses = queries.flatMap((q) => q.addresses ?? [])
    if (addresses.length > 0) return addresses
    throw unresolved(hostname, queries.map((q) => q.error ?? Object.assign(new Error('no address'), { code: 'ENODATA' })))
  }
}

/** A `net.connect` lookup that resolves the name and keeps only the allowed addresses (an error when none is). */
export function guardedLookup(guard: AddressGuard, opts: ResolveOptions = {}) {
  const resolve = createNameResolver(opts)
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (list) => {
        const wanted = options.family === 4 || options.family === 6 ? list.filter((a) => a.family === options.family) : list
        const allowed = wanted.filter((a) => guard.allowed(a.address))
        if (allowed.length === 0) return callback(guard.refusal(hostname, wanted[0]?.address ?? list[0]?.address ?? 'no address') as unknown as NodeJS.ErrnoException, [])
        if (options.all) return callback(null, allowed)
        const one = allowed[0]!
        return callback(null, one.address, one.family)
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    )
  }
}

/** An undici Agent whose every new connection passes `guard`. */
export function createGuardedAgent(guard: AddressGuard, connectTimeoutMs: number, options: Omit<Agent.Options, 'connect'> = {}, resolve: ResolveOptions = {}): Agent {
  const connect = buildConnector({ timeout: connectTimeoutMs, lookup: guardedLookup(guard, resolve) } as buildConnector.BuildOptions)
  return new Agent({
    ...options,
    connect(opts, callback) {
      // IP literals never reach `lookup` (net.connect skips it): check them here.
      const host = opts.hostname.replace(/^\[|\]$/g, '')
      if (isIP(host) !== 0 && !guard.allowed(host)) return callback(guard.refusal(host, host), null)
      return connect(opts, callback)
    },
  })
}
