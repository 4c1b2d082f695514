/* version.h: the program's version, in its output and its JSON documents. */
#ifndef GPUIPC_APP_VERSION_H
#define GPUIPC_APP_VERSION_H

#define GPUIPC_VERSION "0.1.0"

#endif
