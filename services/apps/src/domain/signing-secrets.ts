/**
 * The webhook signing secret an app environment needs once a channel is configured. The secret belongs to the events
 * domain (it signs the deliveries); the apps domain asks it for one with its idempotent `ensureSigningSecret` and
 * retries until it is done: `webhook.signingSecretEnsured` in the app environment's document records that it was.
 * A configuration saved without it (the process stopped, or the events domain could not be reached, between the two
 * writes, or its answer was lost after the secret was made) is completed by the next updateConfig of that environment,
 * which has the secret created, or given again, and returns it (docs/events.md, "Signing secrets").
 */
import type { Environment } from '@svc/vocabulary'
import type { AppsModels } from '../models'
import type { Logger } from 'pino'
import { inAppEnvironmentTurn } from './app-environment'

export interface SigningSecrets {
  /** the app environment's first signing secret unless it has one; the secret itself in every answer */
  ensure(appDid: string, environment: Environment): Promise<{ secret: string | null }>
}

const ATTEMPTS = 3
const BACKOFF_MS = [100, 400]

/** Ensures the secret (retrying a failed call twice), returns it, and records that the app got it. */
export async function ensureSigningSecretOf(
  d: { models: AppsModels; signingSecrets: SigningSecrets; logger?: Logger },
  appDid: string,
  environment: Environment,
): Promise<string | null> {
  let issued: { secret: string | null } | undefined
  for (let attempt = 1; !issued; attempt++) {
    try {
      issued = await d.signingSecrets.ensure(appDid, environment)
    } catch (err) {
      if (attempt >= ATTEMPTS) throw err
      await new Promise((resolve) => setTimeout(resolve, BACKOFF_MS[attempt - 1]))
    }
  }
  await inAppEnvironmentTurn(d, appDid, environment, () =>
    d.models.AppEnvironment.updateOne({ appDid, environment }, { $set: { 'webhook.signingSecretEnsured': true } }, { timestamps: false }),
  )
  return issued.secret
}
