/**
 * The reason a failed attempt records is bounded: a resolver's or socket's message may quote the host, and a
 * webhook URL kept before its length was limited can be long. Loopback only; the name fails in the resolver.
 */
import { ATTEMPT_ERROR_CHARS, createGuardedAgent, sendAttempt } from '../src/delivery/transport'

test('a request that fails on a 3,000-character host name records a reason of at most 500 characters', async () => {
  const agent = createGuardedAgent({ environment: 'test', allowLoopbackInTest: false }, 1000)
  try {
    const result = await sendAttempt(agent, { url: `http://${'a'.repeat(3000)}.example/hook`, headers: {}, body: '{}' }, 2000)
    expect(result.statusCode).toBeNull()
    expect(result.error).toMatch(/^request failed: /)
    expect(result.error!.length).toBeLessThanOrEqual(ATTEMPT_ERROR_CHARS)
  } finally {
    await agent.close()
  }
})
