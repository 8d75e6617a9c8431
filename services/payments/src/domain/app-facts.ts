/**
 * What the payments domain reads from the domains that own it, for the app it serves: the app's environment, fee
 * rates and origin (apps), its approval by a recipient (apps) and the recipient's payout readiness (actors). The
 * use cases ask for these facts themselves; in the running service they come through the graph with the payments
 * subgraph's own key, as the service `payments` (graph-facts.ts). One read per use case.
 */
import type { Environment } from '@svc/vocabulary'
import type { ServiceFeeRate } from './fees'

/** The app's approval by the recipient in one environment, and the recipient's payout facts. */
export interface ApprovalFacts {
  id: string
  /** with the id, the grant: a revoke and a new approval of the same request is another revision */
  revision: number
  status: string
  paymentTypes: string[]
  feeShareBps: number
  publicRecords: { enabled: boolean }
}

export interface RecipientFacts {
  did: string
  displayName?: string | null
  payable: boolean
  payoutStatus: string
  /** the payment types the recipient accepts (its profile's; an operator may narrow them) */
  paymentTypes: string[]
}

/** What a checkout is decided on. */
export interface CheckoutFacts {
  /** the environment the app works in for this checkout (the product's, else the app's only configured one) */
  environment: string
  /** the app's platform fee rates in that environment */
  serviceFee: ServiceFeeRate
  /** the most the app may take of a sale (its registered fee share), which caps what an approval grants */
  feeShareCapBps: number
  /** the app's approval by the recipient; null when there is none */
  approval: Omit<ApprovalFacts, 'publicRecords'> | null
  /** the recipient actor in that environment; null when unknown */
  recipient: RecipientFacts | null
}

export interface AppFacts {
  /** the app's environment (the one given must be configured; none given: the app's only one) */
  environment(appDid: string, environment: string | null): Promise<Environment>
  /** a checkout's facts for a product to `recipientDid` */
  checkout(appDid: string, environment: string | null, recipientDid: string): Promise<CheckoutFacts>
  /** the app's registered origin, and whether the record's repository is a known actor */
  appLink(appDid: string, environment: string | null, repoDid: string): Promise<{ environment: Environment; appUrl: string; repoKnown: boolean }>
  /** whether the recipient delegated proof registration to the app: a current approval with public records on */
  proofDelegation(appDid: string, environment: string | null, recipientDid: string): Promise<{ environment: Environment; delegated: boolean }>
}
