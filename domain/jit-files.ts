/**
 * The runner settings files a JIT config holds, by the names GARM's metadata service
 * serves them under (`credentials/<name>`); the runner reads each as `.<name>`.
 */
export const JIT_FILES = ['runner', 'credentials', 'credentials_rsaparams'] as const;
