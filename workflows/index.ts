export { runnerInstance } from './runner-instance';
