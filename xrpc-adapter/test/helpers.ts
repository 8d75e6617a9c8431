/**
 * Helpers of the adapter's own tests (not a test file): the dependencies of a bare api or checkout server, with
 * neither gateway nor Redis behind them (each test adds what its routes need).
 */
import Redis from 'ioredis'
import pino from 'pino'
import { createMetrics } from '@svc/operations'
import type { DashboardSessions } from '@svc/dashboard-session'
import type { ServiceAuthVerifier } from '@svc/service-auth'
import type { GatewayClient } from '@svc/gateway-client'
import type { AdapterDeps } from '../src'

export function bareServerDeps(gateway: GatewayClient, over: Partial<AdapterDeps> = {}): AdapterDeps {
  return {
    logger: pino({ level: 'silent' }),
    gateway,
    serviceAuth: {} as ServiceAuthVerifier,
    dashboardSessions: {} as DashboardSessions,
    checkoutUrl: 'http://127.0.0.1:1',
    redis: new Redis({ lazyConnect: true }),
    redisPrefix: 'adapter-test:',
    metrics: createMetrics('xrpc-adapter'),
    metricsToken: 'unused',
    limits: { xrpc: { max: 0, windowMs: 60_000 }, issuerLookupsPerAddress: { max: 0, windowMs: 60_000 }, utility: { max: 0, windowMs: 60_000 }, requestTimeoutMs: 30_000, payAttemptsPerCheckout: 5, payAttemptsPerAddress: { max: 0, windowMs: 60_000 } },
    ...over,
  }
}
