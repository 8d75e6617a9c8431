/**
 * Where an app may ask us to send signed events. Refused (WebhookUrlNotAllowed): anything but http(s);
 * http in live; credentials in the URL; private, loopback, link-local, CGNAT, unique-local and other
 * non-public addresses in either environment (SSRF), whether written as an IP literal or resolved
 * from the host name. The one exception: loopback http(s) in the test environment when the operator
 * turned on the explicit development setting DEV_ALLOW_LOOPBACK_WEBHOOKS (local receivers).
 */
import type { LookupAddress } from 'node:dns'
import { createNameResolver } from './guarded-agent'
import { BlockList, isIP } from 'node:net'
import pTimeout from 'p-timeout'
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'

const nonPublic = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) nonPublic.addSubnet(net, prefix, 'ipv4')
for (const [net, prefix] of [
  // ::/96 also covers the deprecated IPv4-compatible form (::127.0.0.1); 6to4 (2002::/16), Teredo (2001::/32),
  // IPv4-translated (::ffff:0:0:0/96) and NAT64 (64:ff9b::/96, and local-use 64:ff9b:1::/48) addresses can embed
  // any IPv4 address, so they are refused whole; as are site-local (fec0::/10) and discard-only (100::/64) ones.
  ['::', 96], ['::ffff:0:0:0', 96], ['2002::', 16], ['2001::', 32], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
  ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001:db8::', 32],
] as const) nonPublic.addSubnet(net, prefix, 'ipv6')

const loopback = new BlockList()
loopback.addSubnet('127.0.0.0', 8, 'ipv4')
loopback.addAddress('::1', 'ipv6')

function family(ip: string): 'ipv4' | 'ipv6' {
  return isIP(ip) === 6 ? 'ipv6' : 'ipv4'
}

function unmapped(ip: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  return m?.[1] ?? ip
}

export function isLoopbackAddress(ip: string): boolean {
  const a = unmapped(ip)
  return loopback.check(a, family(a))
}

export function isNonPublicAddress(ip: string): boolean {
  const a = unmapped(ip)
  return nonPublic.check(a, family(a))
}

export type Resolve = (host: string) => Promise<string[]>

let resolveName: ((host: string) => Promise<LookupAddress[]>) | null = null
/** DNS queries on the event loop, as deliveries make them (guarded-agent.ts: a name whose servers never answer holds no thread) */
const systemResolve: Resolve = async (host) => {
  resolveName ??= createNameResolver()
  return (await resolveName(host)).map((a) => a.address)
}

async function resolveQuietly(host: string, resolve: Resolve): Promise<string[]> {
  try {
    return await pTimeout(resolve(host), { milliseconds: 2000, fallback: () => [] })
  } catch {
    // An unresolvable name is not refused here; deliveries check the address again when they connect.
    return []
  }
}

export interface WebhookUrlPolicy {
  environment: Environment
  allowLoopbackInTest: boolean
  resolve?: Resolve
}

function refuse(reason: string): never {
  throw new ContractError('WebhookUrlNotAllowed', reason)
}

/** The longest webhook or receiver URL kept (as a checkout's return URLs): each attempt records it, and its errors may. */
const MAX_WEBHOOK_URL_LENGTH = 2048
/** A DNS name has at most 253 characters (RFC 1035); a longer one can only fail, at every attempt, with itself in the error. */
const MAX_HOST_NAME_LENGTH = 253

export async function assertWebhookUrlAllowed(raw: string, policy: WebhookUrlPolicy): Promise<string> {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) refuse(`webhookUrl must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`)
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    refuse('webhookUrl is not a valid URL')
  }
  // as stored: the parser percent-encodes, so a short URL of non-ASCII characters can grow ninefold
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) refuse(`webhookUrl must be at most ${MAX_WEBHOOK_URL_LENGTH} characters (percent-encoded)`)
  if (url.protocol !== 'https:' && url.protocol !== 'http:') refuse('webhookUrl must use https')
  if (url.username || url.password) refuse('webhookUrl must not carry credentials')
  if (url.hash) refuse('webhookUrl must not have a fragment')
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase()
  const literal = isIP(host) !== 0
  // `localhost.` (the absolute form, trailing dot) is the same name as `localhost`
  const name = host.replace(/\.$/, '')
  if (name.length > MAX_HOST_NAME_LENGTH) refuse(`the host name of webhookUrl must be at most ${MAX_HOST_NAME_LENGTH} characters`)
  const namedLoopback = name === 'localhost' || name.endsWith('.localhost')
  const addresses = literal ? [host] : namedLoopback ? ['127.0.0.1'] : await resolveQuietly(host, policy.resolve ?? systemResolve)
  const allLoopback = addresses.length > 0 && addresses.every(isLoopbackAddress)

  if (allLoopback && policy.environment === 'test' && policy.allowLoopbackInTest) return url.toString()
  if (allLoopback) {
    refuse(
      policy.environment === 'live'
        ? 'loopback webhook URLs are not allowed in live'
        : 'loopback webhook URLs need the development setting DEV_ALLOW_LOOPBACK_WEBHOOKS in test',
    )
  }
  if (addresses.some(isNonPublicAddress)) refuse('webhookUrl must resolve to a public address')
  if (policy.environment === 'live' && url.protocol !== 'https:') refuse('webhookUrl must use https in live')
  return url.toString()
}

/**
 * The check a delivery repeats on the address it is about to connect to (a name may resolve elsewhere than it
 * did at configuration time): public addresses always; loopback only in test with DEV_ALLOW_LOOPBACK_WEBHOOKS.
 */
export function deliveryAddressAllowed(ip: string, policy: Omit<WebhookUrlPolicy, 'resolve'>): boolean {
  if (isLoopbackAddress(ip)) return policy.environment === 'test' && policy.allowLoopbackInTest
  return !isNonPublicAddress(ip)
}

export { AddressRefusedError, createGuardedAgent, createNameResolver, guardedLookup, type AddressGuard, type ResolveOptions } from './guarded-agent'
