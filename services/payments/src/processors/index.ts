/**
 * Payment processors: what charges a buyer's card. One interface; a registry picks the processor of a checkout's
 * environment. The test environment has the built-in TestProcessor; live has none until a real processor adapter
 * is configured (`liveProcessor: 'none'`), so live checkouts are refused with ProcessorNotConfigured.
 */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import type { PaymentsModels } from '../models'
import type { PaymentProcessor } from './processor'
import { TestProcessor } from './test-processor'

export type LiveProcessorSetting = 'none'

export const PROCESSOR_NOT_CONFIGURED_MESSAGE = 'live checkouts need a live payment processor; none is configured'

/** The processor of each environment; `null` = none configured. */
export class ProcessorRegistry {
  constructor(private readonly byEnvironment: Record<Environment, PaymentProcessor | null>) {}

  /** The processor of an environment, or ProcessorNotConfigured. */
  forEnvironment(environment: Environment): PaymentProcessor {
    const processor = this.byEnvironment[environment]
    if (!processor) {
      throw new ContractError(
        'ProcessorNotConfigured',
        environment === 'live' ? PROCESSOR_NOT_CONFIGURED_MESSAGE : `${environment} checkouts need a payment processor; none is configured`,
      )
    }
    return processor
  }
}

/**
 * The registry of the service's settings: the test processor (its ledger in the payments database) for test; live
 * per `liveProcessor` (only 'none' exists).
 */
export function createProcessorRegistry(
  settings: { liveProcessor: LiveProcessorSetting; testProcessorLatencyMs?: number },
  models: Pick<PaymentsModels, 'TestCharge'>,
): ProcessorRegistry {
  if (settings.liveProcessor !== 'none') throw new Error(`unknown live processor ${String(settings.liveProcessor)}`)
  return new ProcessorRegistry({ test: new TestProcessor(models.TestCharge, { latencyMs: settings.testProcessorLatencyMs }), live: null })
}

export { TestProcessor, TEST_CARDS } from './test-processor'
export type { Card, ChargeFailureCode, ChargeRequest, ChargeResult, PaymentProcessor } from './processor'
