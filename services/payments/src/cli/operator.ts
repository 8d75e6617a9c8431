/**
 * Operator commands for payments (run with `npm run operator:payments -- <command> …`). They act on the payments
 * domain directly with MONGO_URL and the service's own settings (SERVICE_DID, PAYMENT_TOKEN_SECRET, CHECKOUT_URL, …;
 * defaults: the dev command's), so what they settle is what the service would have settled; a ticket checkout's hold
 * is settled through the gateway (GATEWAY_URL, PAYMENTS_CONTEXT_KEY), as the service does it.
 *
 *   checkout   one checkout's state and settlement, by id or by the app's order id; never its tokens
 *   sweep      the expiry sweep and settlement recovery once, as the service runs it every minute
 */
import pino from 'pino'
import { loadConfig, loggerOptions } from '@svc/config'
import { createGatewayClient } from '@svc/gateway-client'
import { parseOperatorArgs, requiredOption, runOperatorCommand, UsageError, withDomain } from '@svc/subgraph-server'
import { findCheckoutState, type CheckoutQuery, type CheckoutState } from '../domain/checkout-state'
import type { PaymentsDomain } from '../domain/context'
import { sweepCheckouts } from '../domain/sweep-checkouts'
import { createGraphHolds } from '../graph-holds'
import { createPaymentsModels } from '../models'
import { createProcessorRegistry } from '../processors'

const USAGE = `usage: npm run operator:payments -- <command> [options]

  checkout   --id <chk_…>
             --order <appOrderId> --app <did> --env <test|live>
             (the checkout's state, amounts, payment record and settlement; never its tokens)
  sweep      [--limit 500]
             (expires pending checkouts past their expiry and finishes processing ones whose outcome is known,
              at most --limit of each; prints how many)

Add --json for machine-readable output.`

const options = {
  id: { type: 'string' },
  order: { type: 'string' },
  app: { type: 'string' },
  env: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
} as const

/** The options each command takes (parseOperatorArgs refuses others, and any given twice). */
const TAKES = {
  checkout: ['id', 'order', 'app', 'env'],
  sweep: ['limit'],
} as const

/** The payments domain as the service builds it from the same configuration. */
async function withPayments<T>(fn: (d: PaymentsDomain) => Promise<T>): Promise<T> {
  const config = loadConfig()
  const logger = pino(loggerOptions(config, 'payments-operator'), pino.destination(2))
  // asked only by a ticket checkout (its hold), so the other commands never reach the gateway
  const gateway = createGatewayClient({ url: config.gatewayUrl, signer: { issuer: 'payments', key: config.secrets.callerKeys.payments }, timeoutMs: 10_000 })
  try {
    return await withDomain(config.mongoUrl, createPaymentsModels, (models) =>
      fn({
        models,
        processors: createProcessorRegistry({ liveProcessor: config.liveProcessor }, models),
        serviceDid: config.serviceDid,
        checkoutUrl: config.checkoutUrl,
        tokenSecret: config.secrets.paymentTokens,
        previousTokenSecret: config.secrets.previousPaymentTokens,
        checkoutExpirySeconds: config.checkoutExpirySeconds,
        logger,
        holds: createGraphHolds(gateway),
      }),
    )
  } finally {
    await gateway.close()
  }
}

function checkoutQuery(values: { id?: string; order?: string; app?: string; env?: string }): CheckoutQuery {
  if (values.id !== undefined) {
    if (values.order !== undefined || values.app !== undefined || values.env !== undefined) throw new UsageError('give --id, or --order with --app and --env, not both')
    return { id: requiredOption(values, 'id') }
  }
  if (values.order === undefined) throw new UsageError('--id or --order is required')
  return { appOrderId: requiredOption(values, 'order'), appDid: requiredOption(values, 'app'), environment: requiredOption(values, 'env') }
}

function describe(c: CheckoutState): string {
  const money = `${c.amount} ${c.currency} (service fee ${c.serviceFee}, buyer fee ${c.buyerFee}, total ${c.total})`
  const status = c.failureReason ? `${c.status} (${c.failureReason})` : c.status
  const when = [`created ${c.createdAt}`, `expires ${c.expiresAt}`, c.completedAt && `completed ${c.completedAt}`, c.failedAt && `failed ${c.failedAt}`]
  const lines = [
    `${c.id}  ${status}  ${c.environment}`,
    `  app ${c.appDid}, order ${c.appOrderId}`,
    `  ${c.paymentType} to ${c.recipientDid}${c.recipientName ? ` ("${c.recipientName}")` : ''}: ${money}`,
    `  ${when.filter(Boolean).join(', ')}`,
  ]
  if (c.failureMessage) lines.push(`  failure: ${c.failureMessage}`)
  if (c.ref) lines.push(`  payment record ${c.ref.uri} (cid ${c.ref.cid})`)
  const s = c.settlement
  if (!s) lines.push('  settlement: not claimed')
  else {
    const outcome = !s.outcome
      ? 'no outcome yet (the processor has not answered)'
      : s.outcome.ok
        ? `paid${s.outcome.chargeId ? `, charge ${s.outcome.chargeId}` : ''}`
        : `failed: ${s.outcome.reason ?? 'unknown'}${s.outcome.code ? ` (${s.outcome.code})` : ''}`
    lines.push(`  settlement: claimed by ${s.by} at ${s.claimedAt}${s.processor ? ` (processor ${s.processor})` : ''}, ${outcome}`)
  }
  return lines.join('\n')
}

function limitOf(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined
  if (!/^[1-9]\d*$/.test(raw)) throw new UsageError('--limit must be a whole number of at least 1')
  return Number(raw)
}

async function main(argv: string[]) {
  const { values, command } = parseOperatorArgs(argv, options, TAKES)
  if (!command || values.help) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  switch (command) {
    case 'checkout': {
      const query = checkoutQuery(values)
      const state = await withPayments((d) => findCheckoutState(d, query))
      process.stdout.write(values.json ? `${JSON.stringify(state, null, 2)}\n` : `${describe(state)}\n`)
      return
    }
    case 'sweep': {
      const limit = limitOf(values.limit)
      const { expired, recovered, failed } = await withPayments((d) => sweepCheckouts(d, { limit }))
      const result = { expired, recovered, failed }
      process.stdout.write(
        values.json ? `${JSON.stringify(result, null, 2)}\n` : `expired ${result.expired}, recovered ${result.recovered}, failed ${result.failed}\n`,
      )
      // a checkout that could not be settled is logged above; the next sweep tries it again
      if (result.failed > 0) process.exitCode = 1
      return
    }
    default:
      throw new UsageError(`unknown command ${command}`)
  }
}

runOperatorCommand(main, USAGE)
