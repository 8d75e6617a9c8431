/**
 * `/xrpc/{nsid}`: GET for queries, POST for procedures. In order: unknown or retired NSID → 501;
 * wrong verb → 400; params and body validated against the lexicon → 400 InvalidRequest naming the
 * field; planned method → 501; the auth verifier the method was registered with; its handler (a plain function:
 * its own checks, one gateway operation, the answer mapped; the domain that serves it gathers every fact it decides
 * on and makes every change it needs); the output checked against the lexicon.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ContractError } from '@svc/errors'
import { lexicons, RETIRED_NSIDS } from '@svc/lexicons'
import type { GatewayClient, GatewayDocument } from '@svc/gateway-client'
import { isPlanned, type HandlerContext, type MethodTable } from '../methods'
import { decodeParams } from './xrpc-params'

export interface XrpcPluginOptions {
  methods: MethodTable
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

    const caller = await route.auth(request.headers.authorization, nsid)
    request.log = request.log.child({ appDid: caller.appDid, nsid })
    const as = { principal: caller, requestId: request.id, log: request.log }
    // the lexicon checks above are what make params and input the method's generated types
    const ctx = {
      nsid: route.nsid,
      params,
      input,
      caller,
      graph: <TResult, TVariables>(document: GatewayDocument<TResult, TVariables>, variables: TVariables) => opts.gateway.query(document, variables, as),
    } as unknown as HandlerContext<typeof route.nsid>
    const output: unknown = await route.handler(ctx)
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
