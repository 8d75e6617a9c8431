/**
 * Names are resolved by DNS queries on the event loop (c-ares), against a DNS server on loopback made here: the
 * addresses, the guard applied to them, the errors as getaddrinfo names them, `localhost` without a query, and a
 * server that never answers holding none of libuv's threads (other threaded work finishes while its lookups wait).
 */
import { createSocket, type Socket } from 'node:dgram'
import { pbkdf2 } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import { AddressRefusedError, createGuardedAgent, guardedLookup, type AddressGuard } from '../src/guarded-agent'

type Records = Record<string, { a?: string[]; aaaa?: string[] } | 'nxdomain'>

/** A DNS server answering A and AAAA queries from `records`, or none at all (`silent`) or none of one type; counts the queries. */
async function dnsServer(records: Records, silent: boolean | 'A' | 'AAAA' = false): Promise<{ servers: string[]; queries: string[]; close(): Promise<void> }> {
  const socket: Socket = createSocket('udp4')
  const queries: string[] = []
  socket.on('message', (msg, peer) => {
    let offset = 12
    const labels: string[] = []
    while (msg[offset]! > 0) {
      labels.push(msg.subarray(offset + 1, offset + 1 + msg[offset]!).toString('ascii'))
      offset += msg[offset]! + 1
    }
    const question = msg.subarray(12, offset + 5)
    const type = msg.readUInt16BE(offset + 1)
    const name = labels.join('.').toLowerCase()
    const asked = type === 1 ? 'A' : type === 28 ? 'AAAA' : String(type)
    queries.push(`${name} ${asked}`)
    if (silent === true || silent === asked) return
    const entry = records[name]
    const answers = entry === undefined || entry === 'nxdomain' ? [] : type === 1 ? (entry.a ?? []) : type === 28 ? (entry.aaaa ?? []) : []
    const header = Buffer.alloc(12)
    msg.copy(header, 0, 0, 2)
    header.writeUInt16BE(0x8180 | (entry === 'nxdomain' ? 3 : 0), 2)
    header.writeUInt16BE(1, 4)
    header.writeUInt16BE(answers.length, 6)
    const rrs = answers.map((address) => {
      const rdata = type === 1 ? Buffer.from(address.split('.').map(Number)) : ipv6Bytes(address)
      const rr = Buffer.alloc(12)
      rr.writeUInt16BE(0xc00c, 0)
      rr.writeUInt16BE(type, 2)
      rr.writeUInt16BE(1, 4)
      rr.writeUInt32BE(60, 6)
      rr.writeUInt16BE(rdata.length, 10)
      return Buffer.concat([rr, rdata])
    })
    socket.send(Buffer.concat([header, question, ...rrs]), peer.port, peer.address)
  })
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
  return { servers: [`127.0.0.1:${(socket.address() as AddressInfo).port}`], queries, close: () => new Promise((resolve) => socket.close(() => resolve())) }
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.split('::') as [string, string | undefined]
  const parts = (s: string | undefined) => (s ? s.split(':').map((h) => parseInt(h, 16)) : [])
  const groups = [...parts(head), ...Array(8 - parts(head).length - parts(tail).length).fill(0), ...parts(tail)]
  const out = Buffer.alloc(16)
  groups.forEach((g, i) => out.writeUInt16BE(g, i * 2))
  return out
}

const anyAddress: AddressGuard = { allowed: () => true, refusal: (host, address) => new AddressRefusedError(`${host} ${address}`) }
const publicOnly: AddressGuard = { allowed: (ip) => !/^(10\.|127\.)/.test(ip), refusal: (host, address) => new AddressRefusedError(`${host} is not public (${address})`) }

function lookupWith(guard: AddressGuard, servers: string[], hostname: string, options: { all?: boolean; family?: number } = { all: true }) {
  return new Promise<{ address: string; family?: number }[] | string>((resolve, reject) => {
    guardedLookup(guard, { servers })(hostname, options, (err, address) => (err ? reject(err) : resolve(address as never)))
  })
}

test('the A and AAAA records of a name, IPv4 first; one of them when the caller asks for one or a family', async () => {
  const dns = await dnsServer({ 'hooks.example.com': { a: ['203.0.113.10'], aaaa: ['2001:db8::7'] }, 'v4.example.com': { a: ['203.0.113.11'] } })
  try {
    expect(await lookupWith(anyAddress, dns.servers, 'Hooks.Example.com')).toEqual([
      { address: '203.0.113.10', family: 4 },
      { address: '2001:db8::7', family: 6 },
    ])
    expect(await lookupWith(anyAddress, dns.servers, 'hooks.example.com', { family: 6, all: true })).toEqual([{ address: '2001:db8::7', family: 6 }])
    expect(await lookupWith(anyAddress, dns.servers, 'v4.example.com', {})).toBe('203.0.113.11')
  } finally {
    await dns.close()
  }
})

test("the guard sees every address: a name that resolves only inside is refused, one that resolves both ways connects only outside", async () => {
  const dns = await dnsServer({ 'inside.example.com': { a: ['10.0.0.5'] }, 'mixed.example.com': { a: ['10.0.0.6', '203.0.113.12'] } })
  try {
    await expect(lookupWith(publicOnly, dns.servers, 'inside.example.com')).rejects.toThrow(new AddressRefusedError('inside.example.com is not public (10.0.0.5)'))
    expect(await lookupWith(publicOnly, dns.servers, 'mixed.example.com')).toEqual([{ address: '203.0.113.12', family: 4 }])
  } finally {
    await dns.close()
  }
})

test('errors carry the codes getaddrinfo gives: ENOTFOUND for a name DNS does not know or cannot be asked, EAI_AGAIN when no server answers', async () => {
  const dns = await dnsServer({ 'gone.example.com': 'nxdomain' })
  const silent = await dnsServer({}, true)
  try {
    await expect(lookupWith(anyAddress, dns.servers, 'gone.example.com')).rejects.toMatchObject({ code: 'ENOTFOUND', message: expect.stringMatching(/^could not resolve gone\.example\.com/) })
    await expect(lookupWith(anyAddress, silent.servers, 'slow.example.com')).rejects.toMatchObject({ code: 'EAI_AGAIN' })
    // a name DNS cannot be asked (c-ares: EBADNAME) is not resolved either: nothing is sent to it
    await expect(lookupWith(anyAddress, dns.servers, `${'a'.repeat(64)}.example.com`)).rejects.toMatchObject({ code: 'ENOTFOUND', message: expect.stringMatching(/EBADNAME/) })
  } finally {
    await dns.close()
    await silent.close()
  }
})

test("a server that drops one family's queries: the other family's addresses, without waiting out the dropped query", async () => {
  const noAAAA = await dnsServer({ 'hooks.example.com': { a: ['203.0.113.10'], aaaa: ['2001:db8::7'] } }, 'AAAA')
  const noA = await dnsServer({ 'hooks.example.com': { a: ['203.0.113.10'], aaaa: ['2001:db8::7'] } }, 'A')
  try {
    expect(await lookupWith(anyAddress, noAAAA.servers, 'hooks.example.com')).toEqual([{ address: '203.0.113.10', family: 4 }])
    // c-ares asks again when its first wait ends: the answer came before that
    expect(noAAAA.queries.filter((q) => q.endsWith(' AAAA'))).toEqual(['hooks.example.com AAAA'])
    expect(await lookupWith(anyAddress, noA.servers, 'hooks.example.com')).toEqual([{ address: '2001:db8::7', family: 6 }])
    expect(noA.queries.filter((q) => q.endsWith(' A'))).toEqual(['hooks.example.com A'])
  } finally {
    await noAAAA.close()
    await noA.close()
  }
})

test('localhost and its subdomains are loopback, without a query', async () => {
  const dns = await dnsServer({})
  try {
    expect(await lookupWith(anyAddress, dns.servers, 'localhost')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ])
    expect(await lookupWith(anyAddress, dns.servers, 'app.localhost.', { family: 4 })).toBe('127.0.0.1')
    expect(dns.queries).toEqual([])
  } finally {
    await dns.close()
  }
})

test("names whose server never answers hold none of libuv's threads: threaded work finishes while 8 of them wait", async () => {
  const silent = await dnsServer({}, true)
  try {
    let settled = 0
    const lookups = Array.from({ length: 8 }, (_, i) => lookupWith(anyAddress, silent.servers, `hang${i}.example.com`).finally(() => settled++))
    // pbkdf2 runs on the same four threads getaddrinfo would hold
    await Promise.all(Array.from({ length: 4 }, () => new Promise((resolve, reject) => pbkdf2('x', 'salt', 1000, 32, 'sha256', (err, key) => (err ? reject(err) : resolve(key))))))
    expect(settled).toBe(0)
    const outcomes = await Promise.allSettled(lookups)
    expect(outcomes.map((o) => o.status === 'rejected' && (o.reason as { code?: string }).code)).toEqual(Array(8).fill('EAI_AGAIN'))
  } finally {
    await silent.close()
  }
})

test('an agent connects to the address its name resolves to', async () => {
  const server = createServer((_req, res) => res.end('hello'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const dns = await dnsServer({ 'receiver.example.com': { a: ['127.0.0.1'] } })
  const agent = createGuardedAgent(anyAddress, 2000, {}, { servers: dns.servers })
  try {
    const res = await request(`http://receiver.example.com:${(server.address() as AddressInfo).port}/`, { dispatcher: agent })
    expect(await res.body.text()).toBe('hello')
    expect(dns.queries).toEqual(expect.arrayContaining(['receiver.example.com A']))
  } finally {
    await agent.close()
    await dns.close()
    server.close()
  }
})
