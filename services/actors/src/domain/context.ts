/** What the actors domain functions work with. */
import type { Logger } from 'pino'
import type { ActorsModels } from '../models'

export interface ActorsDomain {
  models: ActorsModels
  logger?: Logger
}
