/**
 * One attempt on the wire (delivery/transport.ts), against loopback receivers: the reason a failed attempt records
 * is bounded (a resolver's message may quote the host, and a URL kept before its length was limited can be long),
 * an XRPC error answer is named from the whole body, whatever the excerpt the log keeps; and the requests of both
 * channels (delivery/channels.ts) carry the API version of the envelope they send.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { generateDidKeyKeypair } from '@svc/service-auth'
import { API_VERSION } from '@svc/vocabulary'
import { webhookRequest, xrpcRequest } from '../src/delivery/channels'
import { ATTEMPT_ERROR_CHARS, createDeliveryAgent, isDuplicateDeliveryAnswer, sendAttempt } from '../src/delivery/transport'

test('a request that fails on a 3,000-character host name records a reason of at most 500 characters, as not resolved and unsent', async () => {
  const agent = createDeliveryAgent({ environment: 'test', allowLoopbackInTest: false }, 1000)
  try {
    const result = await sendAttempt(agent, { url: `http://${'a'.repeat(3000)}.example/hook`, headers: {}, body: '{}' }, 2000)
    expect(result.statusCode).toBeNull()
    // a label of 64 characters or more cannot be asked of DNS: not resolved, and nothing was sent
    expect(result.error).toMatch(/^could not resolve a{400}/)
    expect(result.unsent).toBe(true)
    expect(result.error!.length).toBeLessThanOrEqual(ATTEMPT_ERROR_CHARS)
  } finally {
    await agent.close()
  }
})

test("an XRPC receiver's DuplicateDelivery answer is read from the whole body, not the 500 characters the attempt log keeps", async () => {
  const answers = [
    JSON.stringify({ message: 'x'.repeat(600), error: 'DuplicateDelivery' }),
    JSON.stringify({ error: 'DuplicateDelivery', message: 'y'.repeat(600) }),
    JSON.stringify({ error: 'InvalidEnvelope' }),
  ]
  const server = createServer((req, res) => {
    req.resume()
    res.writeHead(409, { 'content-type': 'application/json' }).end(answers.shift())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const agent = createDeliveryAgent({ environment: 'test', allowLoopbackInTest: true }, 1000)
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/xrpc/money.svc.event.receiveEvent`
    const send = () => sendAttempt(agent, { url, headers: { 'content-type': 'application/json' }, body: '{}' }, 2000)
    const [late, early, other] = [await send(), await send(), await send()]
    expect(late.responseExcerpt).toHaveLength(500)
    expect([isDuplicateDeliveryAnswer(late), isDuplicateDeliveryAnswer(early), isDuplicateDeliveryAnswer(other)]).toEqual([true, true, false])
  } finally {
    await agent.close()
    server.close()
  }
})

test('both channels send the svc-api-version of the delivery\'s envelope, fixed when it was written (a retry after a version change still matches its body)', async () => {
  const written = { id: 'whd_x', appDid: 'did:web:app.example', body: JSON.stringify({ id: 'whd_x', apiVersion: '2025-01', type: 'payment.completed' }) }
  expect(webhookRequest('https://hooks.example.com/', written, [`whsec_${Buffer.alloc(32).toString('base64')}`]).headers['svc-api-version']).toBe('2025-01')
  const service = await generateDidKeyKeypair('ES256K')
  expect((await xrpcRequest('https://app.example.com', written, service, [])).headers['svc-api-version']).toBe('2025-01')
  expect(webhookRequest('https://hooks.example.com/', { ...written, body: JSON.stringify({ id: 'whd_x' }) }, [`whsec_${Buffer.alloc(32).toString('base64')}`]).headers['svc-api-version']).toBe(API_VERSION)
})

test('a receiver that never answers is a timeout at the deadline, not undici\'s headers timeout', async () => {
  const silent = createServer(() => undefined)
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  const agent = createDeliveryAgent({ environment: 'test', allowLoopbackInTest: true }, 1000)
  try {
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`
    const results = await Promise.all(Array.from({ length: 5 }, () => sendAttempt(agent, { url, headers: {}, body: '{}' }, 1500)))
    expect(results.map((r) => [r.statusCode, r.error])).toEqual(Array(5).fill([null, 'timeout: no answer within 1500 ms']))
    // (the error names the attempt's own deadline: undici's backup timeout, 1 s later, names its headers timeout; no
    // bound on the duration here, which a loaded machine stretches)
    for (const r of results) expect(r.durationMs).toBeGreaterThanOrEqual(1400)
  } finally {
    await agent.close()
    silent.closeAllConnections()
    await new Promise((resolve) => silent.close(resolve))
  }
})
