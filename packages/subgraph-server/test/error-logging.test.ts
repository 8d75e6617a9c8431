/**
 * A subgraph logs the errors it answers as ServiceUnavailable or InternalServerError with the request's logger, so
 * the line carries the request id the adapter and the gateway logged; a caller's own error (a contract error) is not
 * logged. Over real HTTP, with a context signed as the adapter signs it.
 */
import { parse } from 'graphql'
import pino from 'pino'
import { ContractError } from '@svc/errors'
import { CONTEXT_HEADER } from '@svc/internal-context'
import { signedContext, testCallerKeys } from '@svc/testing/src/internal-context'
import { startSubgraph, type RunningSubgraph } from '../src'

const keys = testCallerKeys()
const lines: Record<string, unknown>[] = []
let subgraph: RunningSubgraph

beforeAll(async () => {
  subgraph = await startSubgraph({
    name: 'probe',
    typeDefs: parse('type Query { boom: String, refused: String }'),
    resolvers: {
      Query: {
        boom: () => {
          throw new Error('boom')
        },
        refused: () => {
          throw new ContractError('NotFound', 'no such thing')
        },
      },
    },
    callerKeys: keys,
    logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
    host: '127.0.0.1',
    port: 0,
  })
})
afterAll(() => subgraph?.stop())

async function ask(field: string, requestId: string) {
  const res = await fetch(subgraph.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [CONTEXT_HEADER]: signedContext(keys, { kind: 'app', appDid: 'did:web:probe.example' }, { requestId }) },
    body: JSON.stringify({ query: `{ ${field} }` }),
  })
  return ((await res.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code
}

it('an unexpected error is logged with the request id; a contract error is answered, not logged', async () => {
  expect(await ask('boom', 'req-boom-1')).toBe('InternalServerError')
  expect(await ask('refused', 'req-refused-1')).toBe('NotFound')
  const logged = lines.filter((l) => l.msg === 'unexpected resolver error')
  expect(logged).toEqual([expect.objectContaining({ reqId: 'req-boom-1', err: expect.objectContaining({ message: 'boom' }) })])
  expect(lines.filter((l) => l.reqId === 'req-refused-1')).toEqual([])
})
