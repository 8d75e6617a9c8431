/** What the apps domain functions work with: the models and the service's settings. */
import type { Logger } from 'pino'
import type { AppsModels } from '../models'
import type { ActorFacts } from './actor-facts'
import type { SigningSecrets } from './signing-secrets'

/** Which webhook and receiver URLs an app may configure (@svc/webhook-url). */
export interface UpdatePolicy {
  allowLoopbackWebhooksInTest: boolean
  resolve?: (host: string) => Promise<string[]>
}

export interface AppsDomain {
  models: AppsModels
  policy: UpdatePolicy
  /** base of the creator dashboard's pages, e.g. http://127.0.0.1:4001/dashboard */
  dashboardUrl: string
  logger?: Logger
  /** the request being served (its logs' `reqId`), written on the outbox events it causes; absent in sweeps */
  requestId?: string
}

/** The domain as it serves a request: with its reads of the actors domain and the events domain's signing secrets. */
export interface ServingApps extends AppsDomain {
  facts: ActorFacts
  signingSecrets: SigningSecrets
}
