/**
 * `/xrpc/{nsid}`: GET for queries, POST for procedures. In order: unknown or retired NSID → 501;
 * wrong verb → 400; params and body validated against the lexicon → 400 InvalidRequest naming the
 * field; planned method → 501; auth verifier; the method's own checks; its one gateway operation (the domain that
 * serves it gathers every fact it decides on and makes every change it needs), its errors mapped by the method's
 * error table; the output checked against the lexicon.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ContractError } from '@svc/errors'
import { lexicons, RETIRED_NSIDS } from '@svc/lexicons'
import type { GatewayClient } from '@svc/gateway-client'
import { isPlanned, type AuthVerifiers, type MethodCall, type MethodRoute } from '../methods'
import { decodeParams } from './xrpc-params'

export interface XrpcPluginOptions {
  methods: ReadonlyMap<string, MethodRoute>
  verifiers: AuthVerifiers
  gateway: GatewayClient
}

function lexiconMethod(nsid: string) {
  try {
    const def = lexicons.getDef(nsid)
    return def && (def.type === 'query' || def.type === 'procedure') ? def : undefined
  } catch {
    return undefined
  }
}

function validation<T>(fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    throw new ContractError('InvalidRequest', err instanceof Error ? err.message : 'invalid request')
  }
}

export async function xrpcPlugin(app: FastifyInstance, opts: XrpcPluginOptions) {
  const handle = async (request: FastifyRequest<{ Params: { nsid: string } }>) => {
    const { nsid } = request.params
    const def = lexiconMethod(nsid)
    if (!def) throw new ContractError('MethodNotImplemented', `method not implemented: ${nsid}`)
    if (RETIRED_NSIDS.has(nsid)) throw new ContractError('MethodNotImplemented', `${nsid} is retired and no longer served`)

    const expected = def.type === 'query' ? 'GET' : 'POST'
    if (request.method !== expected && !(expected === 'GET' && request.method === 'HEAD')) {
      throw new ContractError('InvalidRequest', `incorrect HTTP method (${request.method}): ${nsid} expects ${expected}`)
    }

    const params = validation(() => {
      const decoded = decodeParams(def, request.query as Record<string, string | string[]>)
      lexicons.assertValidXrpcParams(nsid, decoded)
      return decoded
    })
    let input: Record<string, unknown> = {}
    if (def.type === 'procedure' && def.input) {
      if (request.body === undefined || request.body === null) throw new ContractError('InvalidRequest', 'a JSON request body is required')
      input = validation(() => lexicons.assertValidXrpcInput(nsid, request.body) as Record<string, unknown>)
    }

    const route = opts.methods.get(nsid)
    if (!route || isPlanned(route)) {
      throw new ContractError('MethodNotImplemented', `${nsid} is not available yet${route ? ` (${route.planned})` : ''}`)
    }

    const caller = await opts.verifiers[route.auth](request.headers.authorization, nsid)
    request.log = request.log.child({ appDid: caller.appDid, nsid })
    // the lexicon checks above are what make params and input the method's generated types
    const call = { nsid: route.nsid, params, input, caller } as unknown as MethodCall
    route.check?.(call)
    const as = { principal: caller, requestId: request.id, log: request.log }
    const mapErrors = (err: unknown): never => {
      const mapped = err instanceof ContractError ? route.errors?.[err.code] : undefined
      throw mapped ? new ContractError(mapped, err instanceof Error ? err.message : mapped) : err
    }
    const data = await opts.gateway.query(route.operation, route.variables(call), as).catch(mapErrors)
    const output = route.output(data, call)
    try {
      lexicons.assertValidXrpcOutput(nsid, output)
    } catch (err) {
      request.log.error({ err }, 'output does not match the lexicon')
      throw new ContractError('InternalServerError', 'internal error')
    }
    return output
  }

  app.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/xrpc/:nsid', handler: handle })
}
