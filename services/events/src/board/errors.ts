/**
 * The board's errors, answered as the service answers its refusals: `{ error, message }` with the contract's
 * status, never a stack or a raw message of an unexpected error. bull-board's own handler put the stack in a
 * `details` field under NODE_ENV=development (what `npm run dev` sets), with file paths of the deployment: a static
 * path it refuses (`/board/static/..%5c..%5cpackage.json`) answered 403 with the stack of @fastify/static.
 */
import { ContractError } from '@svc/errors'
import { isRedisUnavailable } from '@svc/operations'

/**
 * The contract error a thrown error is answered as: a caller's bad request keeps its status; Redis away (a restart,
 * a failover: the board's reads fail fast, server.ts) is 503 ServiceUnavailable; anything else is a masked 500.
 */
export function boardError(err: unknown): ContractError {
  if (err instanceof ContractError) return err
  const status = (err as { statusCode?: unknown }).statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (status === 403) return new ContractError('NotAllowed', 'this path is not served')
    if (status === 404) return new ContractError('NotFound', 'no such route')
    if (status === 413) return new ContractError('PayloadTooLarge', 'request body too large')
    return new ContractError('InvalidRequest', (err as Error).message)
  }
  if (isRedisUnavailable(err)) return new ContractError('ServiceUnavailable', 'Redis is unavailable; retry shortly')
  return new ContractError('InternalServerError', 'internal error')
}

/** The answer of bull-board's server adapter for a thrown error (its `setErrorHandler` takes a status and a body). */
export function boardErrorResponse(err: unknown): { status: number; body: { error: string; message: string } } {
  const error = boardError(err)
  return { status: error.status, body: error.toBody() }
}

/**
 * bull-board answers some refusals itself, not by throwing: an unknown queue or job (404), a bad query parameter (400)
 * and, before the board refused writes itself (server.ts), a read-only queue (405), with `{ error: { key } }`. The
 * same answers in the service's shape: `{ error, message }`, the message read from bull-board's key.
 */
export function boardRefusalBody(status: number, payload: unknown): { error: string; message: string } | null {
  if (status < 400 || status >= 500 || typeof payload !== 'string' || !payload.startsWith('{')) return null
  let body: { error?: unknown }
  try {
    body = JSON.parse(payload) as { error?: unknown }
  } catch {
    return null
  }
  const key = (body.error as { key?: unknown } | null | undefined)?.key
  if (typeof key !== 'string') return null
  const message = key.replace(/^ERRORS\./, '').toLowerCase().replace(/_/g, ' ')
  if (status === 404) return { error: 'NotFound', message }
  if (status === 405) return { error: 'MethodNotAllowed', message }
  return { error: 'InvalidRequest', message }
}
