/**
 * The one table of contract error codes and their HTTP statuses (docs/errors.md mirrors it).
 * XRPC error bodies are `{ "error": "<Code>", "message": "<text>" }`.
 */
export const ERROR_STATUS = {
  // 400: bad input and declared input errors
  InvalidRequest: 400,
  InvalidProduct: 400,
  RecipientNotPayable: 400,
  MissingToken: 400,
  InvalidToken: 400,
  ActorRequired: 400,
  WebhookUrlNotAllowed: 400,
  AppUrlNotAllowed: 400,
  InvalidCsv: 400,
  MigrationSourceUnsupported: 400,
  InvalidRole: 400,
  InvalidSignature: 400,
  UnsupportedEvent: 400,
  AppRequired: 400,
  EventRequired: 400,
  BuyerAssertionInvalid: 400,
  OrganizerAssertionInvalid: 400,
  TicketTokenInvalid: 400,
  WebhookNotConfigured: 400,
  // 401: missing or invalid credentials
  Unauthorized: 401,
  AuthMissing: 401,
  BadJwt: 401,
  BadJwtSignature: 401,
  BadJwtAudience: 401,
  BadJwtLexiconMethod: 401,
  JwtExpired: 401,
  JwtLifetimeTooLong: 401,
  JwtReplayed: 401,
  UnresolvableIssuer: 401,
  ApiKeyNotAccepted: 401,
  WebhookSecretNotAccepted: 401,
  // 403: caller not allowed
  AppUnauthorized: 403,
  NotAllowed: 403,
  ScannerNotAuthorized: 403,
  LiveDeveloperActionUnsupported: 403,
  RecipientAppApprovalBlocked: 403,
  TicketsModuleDisabled: 403,
  ProcessorNotConfigured: 403,
  // 404: unknown resource
  NotFound: 404,
  ActorNotFound: 404,
  AppNotRegistered: 404,
  AppEnvironmentNotConfigured: 404,
  AppConfigNotFound: 404,
  RecipientNotFound: 404,
  CreatorNotFound: 404,
  SubscriptionNotFound: 404,
  DeliveryNotFound: 404,
  // 409: conflicts
  DuplicateClaim: 409,
  TicketHoldUnavailable: 409,
  TicketVoided: 409,
  DuplicateDelivery: 409,
  TicketAlreadyCheckedIn: 409,
  ApprovalTermsChanged: 409,
  CheckoutClosed: 409,
  // 408, 413, 429, 5xx
  PayloadTooLarge: 413,
  RequestTimeout: 408,
  RateLimitExceeded: 429,
  InternalServerError: 500,
  MethodNotImplemented: 501,
  ProcessorError: 502,
  ServiceUnavailable: 503,
} as const satisfies Record<string, number>

export type ErrorCode = keyof typeof ERROR_STATUS

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_STATUS, value)
}

export function statusOf(code: ErrorCode): number {
  return ERROR_STATUS[code]
}

/** The longest message an error carries: one that quotes the caller's input (an unknown id of 100 KB) is cut. */
export const MAX_ERROR_MESSAGE_LENGTH = 1_000

/** Cut in the middle, where a quoted input is; the start and the end (what is wrong with it) stay. */
function capped(message: string): string {
  if (message.length <= MAX_ERROR_MESSAGE_LENGTH) return message
  const chars = Array.from(message) // by code point: no half of a surrogate pair is left
  const keep = MAX_ERROR_MESSAGE_LENGTH / 2 - 2
  return `${chars.slice(0, keep).join('')} … ${chars.slice(-keep).join('')}`
}

/** An error the contract names. Thrown anywhere; rendered as `{ error, message }` with its status. */
export class ContractError extends Error {
  readonly code: ErrorCode
  readonly status: number
  constructor(code: ErrorCode, message?: string) {
    super(capped(message ?? code))
    this.name = 'ContractError'
    this.code = code
    this.status = ERROR_STATUS[code]
  }

  toBody(): { error: ErrorCode; message: string } {
    return { error: this.code, message: this.message }
  }
}

/** GraphQL `extensions` a subgraph attaches so the adapter can map an error back to the contract. */
export interface ContractErrorExtensions {
  [key: string]: unknown
  code: ErrorCode
  http: { status: number }
}

export function contractExtensions(code: ErrorCode): ContractErrorExtensions {
  return { code, http: { status: ERROR_STATUS[code] } }
}
