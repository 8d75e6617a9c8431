/**
 * Outgoing connections to hosts a caller named (a webhook, an XRPC receiver, a did:web document): every new
 * connection checks the address it is about to connect to, after resolution, so a name that resolves inside (DNS
 * rebinding, a private address, the metadata service) is refused before a byte is sent.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { isIP } from 'node:net'
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

/** A `net.connect` lookup that resolves as usual and keeps only the allowed addresses (an error when none is). */
export function guardedLookup(guard: AddressGuard) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, [])
      const list = addresses as LookupAddress[]
      const allowed = list.filter((a) => guard.allowed(a.address))
      if (allowed.length === 0) return callback(guard.refusal(hostname, list[0]?.address ?? 'no address') as unknown as NodeJS.ErrnoException, [])
      if (options.all) return callback(null, allowed)
      const one = allowed[0]!
      return callback(null, one.address, one.family)
    })
  }
}

/** An undici Agent whose every new connection passes `guard`. */
export function createGuardedAgent(guard: AddressGuard, connectTimeoutMs: number, options: Omit<Agent.Options, 'connect'> = {}): Agent {
  const connect = buildConnector({ timeout: connectTimeoutMs, lookup: guardedLookup(guard) } as buildConnector.BuildOptions)
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
