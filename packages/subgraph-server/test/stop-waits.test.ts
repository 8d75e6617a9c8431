/**
 * A subgraph's stop waits for the operations still running, also one whose caller hung up (the gateway's deadline,
 * the gateway's own stop): Fastify's close waits only for open connections, and a domain closes its database and its
 * relay once the stop returns. Over real HTTP, with a context signed as the adapter signs it.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { parse } from 'graphql'
import pino from 'pino'
import { CONTEXT_HEADER } from '@svc/internal-context'
import { signedContext, testCallerKeys } from '@svc/testing/src/internal-context'
import { startSubgraph } from '../src'

const keys = testCallerKeys()

it('a stop returns only once an operation whose caller left has finished', async () => {
  const events: string[] = []
  const lines: Record<string, unknown>[] = []
  const caller = new AbortController()
  const subgraph = await startSubgraph({
    name: 'slow',
    typeDefs: parse('type Query { slow: String }'),
    resolvers: {
      Query: {
        slow: async () => {
          events.push('operation started')
          caller.abort() // the caller's deadline passes while the operation runs
          await sleep(1500)
          events.push('operation finished')
          return 'done'
        },
      },
    },
    callerKeys: keys,
    logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
    host: '127.0.0.1',
    port: 0,
  })
  const asked = fetch(subgraph.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [CONTEXT_HEADER]: signedContext(keys, { kind: 'app', appDid: 'did:web:probe.example' }, { requestId: 'req-slow-1' }) },
    body: JSON.stringify({ query: '{ slow }' }),
    signal: caller.signal,
  })
  await expect(asked).rejects.toThrow()
  expect(events).toEqual(['operation started'])

  await subgraph.stop()
  events.push('stopped')
  expect(events).toEqual(['operation started', 'operation finished', 'stopped'])
  expect(lines).toContainEqual(expect.objectContaining({ operations: 1, msg: 'subgraph slow: waiting for the operations still running (their callers left)' }))
})

it('a stop with nothing running returns at once', async () => {
  const subgraph = await startSubgraph({
    name: 'idle',
    typeDefs: parse('type Query { ok: String }'),
    resolvers: { Query: { ok: () => 'ok' } },
    callerKeys: keys,
    logger: pino({ level: 'silent' }),
    host: '127.0.0.1',
    port: 0,
  })
  const res = await fetch(subgraph.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [CONTEXT_HEADER]: signedContext(keys, { kind: 'app', appDid: 'did:web:probe.example' }, { requestId: 'req-ok-1' }) },
    body: JSON.stringify({ query: '{ ok }' }),
  })
  expect(await res.json()).toEqual({ data: { ok: 'ok' } })
  const started = Date.now()
  await subgraph.stop()
  // a stop that waited on the idle keep-alive connection would take its 72 s
  expect(Date.now() - started).toBeLessThan(5000)
})
