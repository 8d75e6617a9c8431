/** What the apps domain functions work with: the models and the service's settings. */
import type { Logger } from 'pino'
import type { AppsModels } from '../models'

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
}
