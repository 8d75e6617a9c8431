/** Operations for every process: metrics, liveness and readiness (docs/operations.md). */
export { collectedGauge, counter, createMetrics, LONG_WAIT_SECONDS, observeDatabaseCommands, secondsHistogram, type CommandMonitor, type ProcessMetrics } from './metrics'
export { closingConnections, operationsRoutes, sameSecret, type OperationsOptions, type ReadinessCheck } from './routes'
export { upstreamReady } from './upstream-ready'
export { CONNECTION_ERROR_LOG_INTERVAL_MS, isConnectionError, isRedisUnavailable, logConnectionErrors, logRedisOutage, REQUEST_REDIS_OPTIONS } from './backing-services'
