/* service.h - weft-service (service.c): a command sold as a service over
 * atomic service channels. */
#ifndef WEFT_SERVICE_SERVICE_H
#define WEFT_SERVICE_SERVICE_H

/* Registers name on the daemon at socket and answers its requests with
 * argv's output until the daemon closes the connection.  The exit status. */
int weft_service_run(const char *socket, const char *name, char *const argv[]);

#endif
