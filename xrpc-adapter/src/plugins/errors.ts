/**
 * Every error leaves as `{ error, message }` with the contract's status. Fastify's own errors
 * (bad JSON, wrong content type, body too large) become InvalidRequest / PayloadTooLarge; Redis out of reach
 * (a restart, a failover: the JWT replay check and the rate limits count there) is a 503 ServiceUnavailable the app
 * retries; anything else unexpected is logged and answered with a masked 500.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ContractError } from '@svc/errors'
import { isRedisUnavailable } from '@svc/operations'

declare module 'fastify' {
  interface FastifyReply {
    contractError?: string
  }
}

/** What a 503 asks a client to wait before its retry. */
export const SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS = 2

export function toContractError(err: unknown, request: FastifyRequest): ContractError {
  if (err instanceof ContractError) return err
  const e = err as FastifyError
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new ContractError('PayloadTooLarge', 'request body too large')
  // Fastify's parser says "not valid JSON" for a `__proto__` key too, and a `constructor` holding `prototype`
  // (refused: prototype poisoning)
  if (e.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return new ContractError('InvalidRequest', 'the body is not valid JSON, or holds a `__proto__` key or a `constructor` key holding `prototype`, which is refused')
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new ContractError('InvalidRequest', e.message)
  }
  if (isRedisUnavailable(err)) {
    request.log.warn({ err }, 'redis unavailable')
    return new ContractError('ServiceUnavailable', 'a backing service is unavailable; retry with backoff')
  }
  request.log.error({ err }, 'unexpected error')
  return new ContractError('InternalServerError', 'internal error')
}

export const errorsPlugin = fp(async (app: FastifyInstance) => {
  app.setErrorHandler(async (err, request, reply: FastifyReply) => {
    const error = toContractError(err, request)
    reply.contractError = error.code
    // a backing service away for a moment (a restart, a failover): a client that honours Retry-After waits a little
    if (error.status === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS)
    return reply.code(error.status).send(error.toBody())
  })
  app.setNotFoundHandler(async (request, reply) => {
    reply.contractError = 'NotFound'
    return reply.code(404).send({ error: 'NotFound', message: `no route for ${request.method} ${request.url.split('?')[0]}` })
  })
})
