export {
  createServiceAuthVerifier,
  DEFAULT_MAX_LIFETIME_SECONDS,
  FORCED_REFRESHES_PER_MINUTE,
  type ServiceAuthVerifier,
  type ServiceAuthVerifierOptions,
  type VerifiedServiceAuth,
} from './verifier'
export {
  generateDidKeyKeypair,
  keypairFromPrivateKeyHex,
  mintServiceJwt,
  SERVICE_JWT_ALGS,
  type DidKeyKeypair,
  type ExportableServiceKeypair,
  type MintServiceJwtParams,
  type ServiceJwtAlg,
} from './mint'
