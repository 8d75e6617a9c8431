/** What the per-address limits count: IPv4 addresses one by one, IPv6 addresses by their /64. */
import { clientNetwork } from '../src/plugins/client-network'

it('counts an IPv4 address as itself, an IPv4-mapped one as its IPv4', () => {
  expect(clientNetwork('203.0.113.7')).toBe('203.0.113.7')
  expect(clientNetwork('::ffff:203.0.113.7')).toBe('203.0.113.7')
  expect(clientNetwork('127.0.0.1')).toBe('127.0.0.1')
})

it('counts an IPv6 address by its /64, however it is written', () => {
  expect(clientNetwork('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64')
  expect(clientNetwork('2001:0db8:0001:0002:ffff:eeee:dddd:cccc')).toBe('2001:db8:1:2::/64')
  expect(clientNetwork('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64')
  expect(clientNetwork('::1')).toBe('::/64')
})

it('leaves anything else as it is', () => {
  expect(clientNetwork('not an address')).toBe('not an address')
})
