// The generated gRPC service and stubs (scalecast.grpc.pb.h), with the codec of Predict's request
// and response: include this instead of the generated header.
//
// gRPC's serialization of a message type (grpc::SerializationTraits, gRPC's hook for it) gives
// the same protobuf bytes with less work than gRPC's generic protobuf path for Predict's messages
// where a client sends and reads them (the server serves Predict raw: server/predict_codec.h):
// that path computes a message's size twice (once to size the buffer, again inside
// SerializeToZeroCopyStream) and writes through a zero-copy stream, and its parser reads through
// one. Here the size is computed once and the message written into one flat slice, and a message
// that arrived as one uncompressed slice is parsed from it in place (anything else takes gRPC's
// own path).
//
// A specialisation must be seen wherever gRPC's templates are instantiated for these types: in
// every file that includes this header (the generated header comes after the specialisations)
// and in the generated scalecast.grpc.pb.cc, compiled with this header forced in
// (proto/CMakeLists.txt).
#ifndef SCALECAST_PROTO_SCALECAST_GRPC_H_
#define SCALECAST_PROTO_SCALECAST_GRPC_H_

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <string>

#include "proto/scalecast/v1/scalecast.pb.h"

namespace scalecast::proto_internal {

template <class T>
class FlatSerializationTraits {
 public:
  static grpc::Status Serialize(const grpc::protobuf::MessageLite& msg, grpc::ByteBuffer* bb,
                                bool* own_buffer) {
    *own_buffer = true;
    grpc::Slice slice(msg.ByteSizeLong());
    msg.SerializeWithCachedSizesToArray(const_cast<uint8_t*>(slice.begin()));
    grpc::ByteBuffer out(&slice, 1);
    bb->Swap(&out);
    return grpc::Status::OK;
  }

  static grpc::Status Deserialize(grpc::ByteBuffer* buffer, grpc::protobuf::MessageLite* msg) {
    grpc::Slice slice;
    if (buffer == nullptr || !buffer->TrySingleSlice(&slice).ok()) {
      return grpc::GenericDeserialize<grpc::ProtoBufferReader, T>(buffer, msg);
    }
    const bool parsed = msg->ParseFromArray(slice.begin(), static_cast<int>(slice.size()));
    buffer->Clear();
    return parsed ? grpc::Status::OK
                  : grpc::Status(grpc::StatusCode::INTERNAL, msg->InitializationErrorString());
  }
};

}  // namespace scalecast::proto_internal

namespace grpc {

template <>
class SerializationTraits<scalecast::v1::PredictRequest, void>
    : public scalecast::proto_internal::FlatSerializationTraits<scalecast::v1::PredictRequest> {};

template <>
class SerializationTraits<scalecast::v1::PredictResponse, void>
    : public scalecast::proto_internal::FlatSerializationTraits<scalecast::v1::PredictResponse> {};

}  // namespace grpc

#include "proto/scalecast/v1/scalecast.grpc.pb.h"  // IWYU pragma: export

#endif  // SCALECAST_PROTO_SCALECAST_GRPC_H_
