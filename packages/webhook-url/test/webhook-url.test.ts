/**
 * Where an app may send webhooks (SSRF rules), with DNS injected: refused URLs throw the contract
 * error WebhookUrlNotAllowed; allowed ones come back normalized.
 */
import { ContractError } from '@svc/errors'
import { assertWebhookUrlAllowed, type WebhookUrlPolicy } from '../src'

const PUBLIC_V4 = '93.184.216.34'
const PUBLIC_V6 = '2606:2800:220:1:248:1893:25c8:1946'

/** A resolver that answers from a table and records what it was asked. */
function dns(table: Record<string, string[]>) {
  const asked: string[] = []
  const resolve = async (host: string) => {
    asked.push(host)
    const answer = table[host]
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return answer
  }
  return { resolve, asked }
}

const publicDns = dns({ 'hooks.example.com': [PUBLIC_V4], 'v6.example.com': [PUBLIC_V6], 'both.example.com': [PUBLIC_V4, PUBLIC_V6] })

function policy(environment: 'test' | 'live', allowLoopbackInTest = false, resolve = publicDns.resolve): WebhookUrlPolicy {
  return { environment, allowLoopbackInTest, resolve }
}

async function refusal(url: string, p: WebhookUrlPolicy): Promise<ContractError> {
  try {
    const allowed = await assertWebhookUrlAllowed(url, p)
    throw new Error(`expected ${url} to be refused, it was allowed as ${allowed}`)
  } catch (err) {
    if (!(err instanceof ContractError)) throw err
    return err
  }
}

async function expectRefused(url: string, p: WebhookUrlPolicy, message?: RegExp) {
  const err = await refusal(url, p)
  expect(err.code).toBe('WebhookUrlNotAllowed')
  expect(err.status).toBe(400)
  if (message) expect(err.message).toMatch(message)
}

describe('non-public IP literals are refused in both environments, whatever the dev setting', () => {
  const cases = [
    ['10/8', ['10.0.0.1', '10.255.255.254']],
    ['172.16/12', ['172.16.0.1', '172.31.255.254']],
    ['192.168/16', ['192.168.0.1', '192.168.255.254']],
    ['100.64/10 (CGNAT)', ['100.64.0.1', '100.127.255.254']],
    ['169.254/16 (link-local, cloud metadata)', ['169.254.169.254', '169.254.0.1']],
    ['0/8', ['0.0.0.0']],
    ['fc00::/7 (unique local)', ['[fc00::1]', '[fd12:3456::1]']],
    ['fe80::/10 (link-local)', ['[fe80::1]', '[febf::1]']],
    ['::', ['[::]']],
    ['::ffff:10.0.0.1 (IPv4-mapped private)', ['[::ffff:10.0.0.1]', '[::ffff:a00:1]', '[::ffff:169.254.169.254]']],
    ['::/96 (IPv4-compatible)', ['[::127.0.0.1]', '[::a00:1]']],
    ['2002::/16 (6to4)', ['[2002:7f00:1::1]', '[2002:a00:1::]']],
    ['::ffff:0:0:0/96 (IPv4-translated)', ['[::ffff:0:a00:1]']],
    ['64:ff9b:1::/48 (local-use NAT64)', ['[64:ff9b:1::a00:1]']],
    ['2001::/32 (Teredo)', ['[2001:0:4136:e378:8000:63bf:3fff:fdd2]']],
    ['fec0::/10 (site-local)', ['[fec0::1]']],
    ['100::/64 (discard-only)', ['[100::1]']],
  ] as const
  for (const [label, hosts] of cases) {
    for (const host of hosts) {
      test.each([
        ['test', false],
        ['test', true],
        ['live', false],
        ['live', true],
      ] as const)(`${label}: ${host} (%s, dev setting %s)`, async (environment, allow) => {
        await expectRefused(`https://${host}/hook`, policy(environment, allow), /public address/)
        await expectRefused(`http://${host}:8080/hook`, policy(environment, allow))
      })
    }
  }

  test('the resolver is not asked about IP literals', async () => {
    const d = dns({})
    await expectRefused('https://10.0.0.1/', policy('test', false, d.resolve))
    await assertWebhookUrlAllowed(`https://${PUBLIC_V4}/`, policy('test', false, d.resolve))
    expect(d.asked).toEqual([])
  })
})

describe('loopback', () => {
  const loopbacks = ['127.0.0.1', '127.1.2.3', '[::1]', '[::ffff:127.0.0.1]', 'localhost', 'hooks.localhost', '0x7f000001', '2130706433', '127.1']

  test.each(loopbacks)('%s is refused in test without the development setting', async (host) => {
    await expectRefused(`http://${host}:3000/hook`, policy('test', false), /DEV_ALLOW_LOOPBACK_WEBHOOKS/)
    await expectRefused(`https://${host}/hook`, policy('test', false))
  })

  test.each(loopbacks)('%s is refused in live even with the development setting', async (host) => {
    await expectRefused(`https://${host}/hook`, policy('live', true), /not allowed in live/)
    await expectRefused(`https://${host}/hook`, policy('live', false))
  })

  test.each(loopbacks)('%s is allowed in test with the development setting, http or https', async (host) => {
    await expect(assertWebhookUrlAllowed(`http://${host}:3000/hook`, policy('test', true))).resolves.toMatch(/^http:\/\/.+:3000\/hook$/)
    await expect(assertWebhookUrlAllowed(`https://${host}/hook`, policy('test', true))).resolves.toMatch(/^https:\/\//)
  })

  test('the allowed loopback URL comes back normalized', async () => {
    await expect(assertWebhookUrlAllowed('http://LOCALHOST:3000/Hook?a=1', policy('test', true))).resolves.toBe('http://localhost:3000/Hook?a=1')
    await expect(assertWebhookUrlAllowed('http://0x7f000001:3000/hook', policy('test', true))).resolves.toBe('http://127.0.0.1:3000/hook')
  })
})

describe('names are judged by what they resolve to', () => {
  const d = dns({
    'internal.example.com': ['10.1.2.3'],
    'metadata.example.com': ['169.254.169.254'],
    'ula.example.com': ['fd00::5'],
    'mapped.example.com': ['::ffff:192.168.1.1'],
    'cgnat.example.com': ['100.100.100.100'],
    'mixed.example.com': [PUBLIC_V4, '192.168.0.10'],
    'mixed-loopback.example.com': [PUBLIC_V4, '127.0.0.1'],
    'loop.example.com': ['127.0.0.1', '::1'],
    'hooks.example.com': [PUBLIC_V4],
  })

  test.each(['internal', 'metadata', 'ula', 'mapped', 'cgnat', 'mixed', 'mixed-loopback'])('%s.example.com → refused everywhere', async (name) => {
    for (const [environment, allow] of [['test', false], ['test', true], ['live', false], ['live', true]] as const) {
      await expectRefused(`https://${name}.example.com/hook`, policy(environment, allow, d.resolve), /public address/)
    }
  })

  test('a name resolving only to loopback follows the loopback rules', async () => {
    await expectRefused('https://loop.example.com/hook', policy('test', false, d.resolve), /DEV_ALLOW_LOOPBACK_WEBHOOKS/)
    await expectRefused('https://loop.example.com/hook', policy('live', true, d.resolve), /not allowed in live/)
    await expect(assertWebhookUrlAllowed('http://loop.example.com/hook', policy('test', true, d.resolve))).resolves.toBe('http://loop.example.com/hook')
  })

  test('the resolver is asked for the lowercased host name', async () => {
    const asked = dns({ 'hooks.example.com': [PUBLIC_V4] })
    await assertWebhookUrlAllowed('https://HOOKS.Example.COM:8443/x', policy('live', false, asked.resolve))
    expect(asked.asked).toEqual(['hooks.example.com'])
  })
})

describe('scheme and environment', () => {
  test('https to a public host is allowed in both environments', async () => {
    for (const environment of ['test', 'live'] as const) {
      await expect(assertWebhookUrlAllowed('https://hooks.example.com/svc/webhook?x=1', policy(environment))).resolves.toBe('https://hooks.example.com/svc/webhook?x=1')
      await expect(assertWebhookUrlAllowed('https://v6.example.com/', policy(environment))).resolves.toBe('https://v6.example.com/')
      await expect(assertWebhookUrlAllowed('https://both.example.com/', policy(environment))).resolves.toBe('https://both.example.com/')
      await expect(assertWebhookUrlAllowed(`https://${PUBLIC_V4}/h`, policy(environment))).resolves.toBe(`https://${PUBLIC_V4}/h`)
      await expect(assertWebhookUrlAllowed(`https://[${PUBLIC_V6}]/h`, policy(environment))).resolves.toBe(`https://[${PUBLIC_V6}]/h`)
    }
  })

  test('http to a public host is allowed in test', async () => {
    await expect(assertWebhookUrlAllowed('http://hooks.example.com/webhook', policy('test'))).resolves.toBe('http://hooks.example.com/webhook')
    await expect(assertWebhookUrlAllowed(`http://${PUBLIC_V4}:8080/webhook`, policy('test'))).resolves.toBe(`http://${PUBLIC_V4}:8080/webhook`)
  })

  test('http is refused in live, even to a public host and with the development setting', async () => {
    await expectRefused('http://hooks.example.com/webhook', policy('live'), /https/)
    await expectRefused('http://hooks.example.com/webhook', policy('live', true), /https/)
    await expectRefused(`http://${PUBLIC_V4}/webhook`, policy('live'), /https/)
  })

  test.each(['ftp://hooks.example.com/x', 'file:///etc/passwd', 'javascript:alert(1)', 'ws://hooks.example.com/', 'gopher://hooks.example.com/'])(
    '%s → refused (not http(s))',
    async (url) => {
      await expectRefused(url, policy('test'))
      await expectRefused(url, policy('live'))
    },
  )

  test.each(['', 'not a url', 'hooks.example.com/webhook', '//hooks.example.com/x', 'https://'])('%j → refused (not a URL)', async (url) => {
    await expectRefused(url, policy('test'))
  })

  test('a fragment is refused', async () => {
    await expectRefused('https://hooks.example.com/webhook#frag', policy('live'), /fragment/)
  })
})

describe('credentials in the URL are refused', () => {
  test.each([
    'https://user:secret@hooks.example.com/webhook',
    'https://user@hooks.example.com/webhook',
    'https://:secret@hooks.example.com/webhook',
    'http://user:pass@localhost:3000/webhook',
  ])('%s', async (url) => {
    await expectRefused(url, policy('test', true), /credentials/)
    await expectRefused(url, policy('live'), /credentials/)
  })
})

describe('a name that does not resolve is accepted (deliveries check the address again)', () => {
  test('the resolver fails', async () => {
    const failing = dns({})
    await expect(assertWebhookUrlAllowed('https://not-yet.example.com/hook', policy('live', false, failing.resolve))).resolves.toBe('https://not-yet.example.com/hook')
    expect(failing.asked).toEqual(['not-yet.example.com'])
  })

  test('the resolver answers nothing', async () => {
    await expect(assertWebhookUrlAllowed('https://empty.example.com/hook', policy('test', false, async () => []))).resolves.toBe('https://empty.example.com/hook')
  })

  test('the resolver never answers', async () => {
    const never = () => new Promise<string[]>(() => undefined)
    await expect(assertWebhookUrlAllowed('https://slow.example.com/hook', policy('live', false, never))).resolves.toBe('https://slow.example.com/hook')
  })

  test('an unresolvable name still has to be https in live', async () => {
    await expectRefused('http://not-yet.example.com/hook', policy('live', false, dns({}).resolve), /https/)
  })
})

describe('length', () => {
  // each delivery attempt records the URL, and a resolver's error names the host: a long one would fill the log
  test('a URL over 2048 characters is refused, one of 2048 is judged as usual', async () => {
    const base = 'https://hooks.example.com/'
    await expectRefused(base + 'p'.repeat(2049 - base.length), policy('live'), /at most 2048 characters/)
    await expect(assertWebhookUrlAllowed(base + 'p'.repeat(2048 - base.length), policy('live'))).resolves.toHaveLength(2048)
  })

  test('the limit applies to the URL as stored, percent-encoded: 300 euro signs are 2,700 characters', async () => {
    const raw = `https://hooks.example.com/${'€'.repeat(300)}`
    expect(raw.length).toBeLessThan(2048)
    await expectRefused(raw, policy('live'), /at most 2048 characters \(percent-encoded\)/)
  })

  test('a host name over 253 characters is refused before it is resolved', async () => {
    const asked = dns({})
    const label = 'a'.repeat(63)
    const long = `${label}.${label}.${label}.${label}.com` // 259 characters
    await expectRefused(`https://${long}/hook`, policy('test', false, asked.resolve), /at most 253 characters/)
    expect(asked.asked).toEqual([])
    const fits = `${label}.${label}.${label}.${'a'.repeat(57)}.com` // 253
    await expect(assertWebhookUrlAllowed(`https://${fits}./hook`, policy('test', false, asked.resolve))).resolves.toBe(`https://${fits}./hook`)
  })
})
