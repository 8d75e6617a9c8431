export * from './ferretdb'
export * from './contract-error'
export * from './isolation'
