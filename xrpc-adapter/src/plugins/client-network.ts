/**
 * What a per-address limit counts (card testing, the utility routes): an IPv4 address as it is, an IPv4-mapped IPv6
 * address as its IPv4, and an IPv6 address by its /64, the smallest network a site is given (RFC 6177). Whoever holds
 * a /64 (any rented server) can send each request from another of its 2^64 addresses, so counting IPv6 addresses one
 * by one would limit nothing.
 */
import ipaddr from 'ipaddr.js'

export function clientNetwork(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip
  const address = ipaddr.process(ip) // an IPv4-mapped IPv6 address becomes its IPv4
  if (address.kind() === 'ipv4') return address.toString()
  const parts = (address as ipaddr.IPv6).parts
  return `${new ipaddr.IPv6([...parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`
}
