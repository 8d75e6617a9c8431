/**
 * The events workers' process (`npm run workers -w @svc/events`): consumes `domain-events` and `webhook-deliveries`,
 * and serves its operations routes on WORKERS_PORT (/livez, /readyz, /metrics: docs/operations.md).
 */
import Fastify from 'fastify'
import { runProcess } from '@svc/config'
import { createMetrics, operationsRoutes } from '@svc/operations'
import { startEventWorkers, type RunningEventWorkers } from './index'

runProcess('events-workers', async (config, logger) => {
  const metrics = createMetrics('events-workers')
  let workers: RunningEventWorkers | null = null
  let stopping = false
  const ready = () =>
    stopping ? Promise.reject(new Error('stopping: finishing the jobs in hand')) : workers ? workers.ready() : Promise.reject(new Error('starting'))
  // the port first: a process that cannot serve its routes (the port taken) exits before it takes any job, rather
  // than with jobs in hand that wait out their locks
  const operations = Fastify()
  await operations.register(operationsRoutes, { metrics, metricsToken: config.secrets.metricsToken, readiness: { 'database and redis': ready } })
  await operations.listen({ host: config.host, port: config.ports.workers })
  try {
    workers = await startEventWorkers({
      mongoUrl: config.mongoUrl,
      redisUrl: config.redisUrl,
      redisPrefix: config.redisPrefix,
      logger,
      gateway: { url: config.gatewayUrl, key: config.secrets.callerKeys.events },
      serviceDid: config.serviceDid,
      serviceSigningKey: config.secrets.serviceSigningKey,
      secretKey: config.secrets.webhookSecretKey,
      previousSecretKey: config.secrets.previousWebhookSecretKey,
      delivery: config.delivery,
      allowLoopbackWebhooks: config.devAllowLoopbackWebhooks,
      metrics,
      databaseCommandMetrics: config.databaseCommandMetrics,
    })
  } catch (err) {
    await operations.close()
    throw err
  }
  const running = workers
  return async () => {
    // readiness answers 503 while the workers finish their jobs, then the routes close
    stopping = true
    await running.stop()
    await operations.close()
  }
})
