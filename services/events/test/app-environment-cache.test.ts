/** The delivery worker's per-app-environment cache (pure logic: the loaders are counted functions). */
import { cachedEndpoints, cachedSigningSecrets } from '../src/delivery/app-environment-cache'
import type { EndpointClient, EndpointLookup } from '../src/delivery/endpoint'

const found: EndpointLookup = { kind: 'found', endpoint: { channel: 'webhook', url: 'https://example.com/hook', configured: true, paused: false } }

function countingClient(answers: EndpointLookup[]): EndpointClient & { calls: string[] } {
  const calls: string[] = []
  return {
    calls,
    async lookup(appDid, environment) {
      calls.push(`${appDid} ${environment}`)
      await new Promise((r) => setTimeout(r, 20))
      return answers[Math.min(calls.length - 1, answers.length - 1)]!
    },
    disable: async () => undefined,
    close: async () => undefined,
  }
}

it('concurrent and later lookups of one app environment within the period share one read; each app environment has its own', async () => {
  const client = countingClient([found])
  const endpoints = cachedEndpoints(client, 60_000)
  const results = await Promise.all(Array.from({ length: 50 }, () => endpoints.lookup('did:web:a.example', 'test')))
  expect(results.every((r) => r === results[0])).toBe(true)
  await endpoints.lookup('did:web:a.example', 'test')
  await endpoints.lookup('did:web:a.example', 'live')
  await endpoints.lookup('did:web:b.example', 'test')
  expect(client.calls).toEqual(['did:web:a.example test', 'did:web:a.example live', 'did:web:b.example test'])
})

it('an unavailable lookup is not kept: the next attempt reads again', async () => {
  const client = countingClient([{ kind: 'unavailable', error: 'gateway down' }, found])
  const endpoints = cachedEndpoints(client, 60_000)
  expect((await endpoints.lookup('did:web:a.example', 'test')).kind).toBe('unavailable')
  expect((await endpoints.lookup('did:web:a.example', 'test')).kind).toBe('found')
  expect((await endpoints.lookup('did:web:a.example', 'test')).kind).toBe('found')
  expect(client.calls).toHaveLength(2)
})

it('after the period the endpoint is read again; 0 reads before every attempt', async () => {
  const client = countingClient([found])
  const short = cachedEndpoints(client, 50)
  await short.lookup('did:web:a.example', 'test')
  await new Promise((r) => setTimeout(r, 80))
  await short.lookup('did:web:a.example', 'test')
  expect(client.calls).toHaveLength(2)

  const uncached = countingClient([found])
  const never = cachedEndpoints(uncached, 0)
  await Promise.all([never.lookup('did:web:a.example', 'test'), never.lookup('did:web:a.example', 'test')])
  expect(uncached.calls).toHaveLength(2)
})

it('signing secrets: one read per app environment and period; a read that throws is not kept', async () => {
  let reads = 0
  const secrets = cachedSigningSecrets(async () => {
    reads++
    if (reads === 1) throw new Error('cannot decrypt')
    return ['whsec_new', 'whsec_old']
  }, 60_000)
  await expect(secrets('did:web:a.example', 'test')).rejects.toThrow('cannot decrypt')
  const [a, b] = await Promise.all([secrets('did:web:a.example', 'test'), secrets('did:web:a.example', 'test')])
  expect(a).toEqual(['whsec_new', 'whsec_old'])
  expect(b).toBe(a)
  expect(reads).toBe(2)
})
