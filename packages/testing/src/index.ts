export * from './ferretdb'
export * from './isolation'
export * from './stack'
